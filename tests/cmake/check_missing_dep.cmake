# tests/cmake/check_missing_dep.cmake: run as `cmake -DLOOM_SOURCE_DIR=...
# -DLOOM_CASE=... -DEXPECT=... -DWORK_DIR=... -P check_missing_dep.cmake`.
# Configures tests/cmake/missing_dep and passes when configure fails with a
# message containing EXPECT (the Debian package to install).
file(REMOVE_RECURSE "${WORK_DIR}")
execute_process(
  COMMAND ${CMAKE_COMMAND} -S "${LOOM_SOURCE_DIR}/tests/cmake/missing_dep" -B "${WORK_DIR}"
          -DLOOM_SOURCE_DIR=${LOOM_SOURCE_DIR} -DLOOM_CASE=${LOOM_CASE}
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(REMOVE_RECURSE "${WORK_DIR}")
if(status EQUAL 0)
  message(FATAL_ERROR "case ${LOOM_CASE}: configure succeeded; expected it to fail naming ${EXPECT}")
endif()
# CMake wraps a message's lines: compare with runs of white space made one space.
string(REGEX REPLACE "[ \t\r\n]+" " " said "${out}${err}")
string(FIND "${said}" "${EXPECT}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "case ${LOOM_CASE}: configure failed without naming '${EXPECT}':\n${err}")
endif()
message(STATUS "case ${LOOM_CASE}: configure failed naming ${EXPECT}")
