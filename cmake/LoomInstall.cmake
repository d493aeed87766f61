# cmake/LoomInstall.cmake: `cmake --install` rules. Installs the public
# headers (include/loom/), the static library libloom.a, the `loom` CLI, a
# CMake package (find_package(loom CONFIG) -> the target loom::loom) and
# loom.pc for pkg-config. Assumes the including CMakeLists.txt defined the
# targets loom and loom_cli and found the dependencies (LoomDependencies.cmake).
#
# libloom is static on purpose (docs/install.md): loom has no stable ABI yet
# (C++20 templates and inline functions in every public header), it is built
# for the build machine (-march=native by default), and one self-contained
# binary is what a training job ships. Its private dependencies (oneDNN,
# utf8proc, PCRE2, MPI, nlohmann_json) are therefore part of the consumer's
# link line: loomConfig.cmake finds them again, and loom.pc lists them in Libs.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(LOOM_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/loom)

install(TARGETS loom EXPORT loomTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS loom_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/loom DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(EXPORT loomTargets NAMESPACE loom:: DESTINATION ${LOOM_INSTALL_CMAKEDIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/loomConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/loomConfig.cmake
                              INSTALL_DESTINATION ${LOOM_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/loomConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/loomConfig.cmake ${PROJECT_BINARY_DIR}/loomConfigVersion.cmake
        DESTINATION ${LOOM_INSTALL_CMAKEDIR})

# loom.pc: the link line of a static libloom spelled out (oneDNN and MPI as
# the files CMake found; utf8proc and PCRE2 through their own .pc files).
set(LOOM_PC_LIBS_EXTRA "$<TARGET_LINKER_FILE:DNNL::dnnl>")
if(LOOM_WITH_MPI)
  foreach(lib ${MPI_CXX_LIBRARIES})
    string(APPEND LOOM_PC_LIBS_EXTRA " ${lib}")
  endforeach()
endif()
# prefix relative to the .pc file, so `cmake --install --prefix P` anywhere works.
file(RELATIVE_PATH LOOM_PC_UP /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
string(REGEX REPLACE "/$" "" LOOM_PC_UP "${LOOM_PC_UP}")
string(REPLACE ";" " " LOOM_PC_OPENMP "${OpenMP_CXX_FLAGS}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/loom.pc.in ${PROJECT_BINARY_DIR}/loom.pc.in @ONLY)
file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/loom.pc INPUT ${PROJECT_BINARY_DIR}/loom.pc.in)
install(FILES ${PROJECT_BINARY_DIR}/loom.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
