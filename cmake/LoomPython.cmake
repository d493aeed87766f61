# cmake/LoomPython.cmake: the Python extension loom._core (LOOM_PYTHON=ON, set
# by pyproject.toml through scikit-build-core). One nanobind module from
# python/src/*.cpp, linked to the same static `loom` library as the CLI
# (compiled with -fPIC in this build only, see CMakeLists.txt), plus its stub
# files written by nanobind's stubgen. Installed with the pure-Python
# layer python/loom/ (scikit-build-core's wheel.packages) into the wheel's
# loom/ folder, component "python" (pyproject.toml installs only that).
# Assumes nanobind is importable by the Python CMake finds (pip's build
# isolation installs it; scripts/setup.sh puts it into .venv/).
find_package(Python 3.9 REQUIRED COMPONENTS Interpreter Development.Module)
if(NOT nanobind_ROOT)
  execute_process(COMMAND "${Python_EXECUTABLE}" -m nanobind --cmake_dir
                  OUTPUT_VARIABLE nanobind_ROOT OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE loom_nanobind_status)
  if(NOT loom_nanobind_status EQUAL 0)
    message(FATAL_ERROR "LOOM_PYTHON: nanobind not found for ${Python_EXECUTABLE} "
                        "(pip install nanobind, or bash scripts/setup.sh)")
  endif()
endif()
find_package(nanobind CONFIG REQUIRED)

file(GLOB LOOM_PYTHON_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/python/src/*.cpp)
# NB_STATIC: nanobind's own runtime linked into the module (MLX's choice too).
nanobind_add_module(_core NB_STATIC ${LOOM_PYTHON_SOURCES})
# src/ for the lazy runtime's internals the bindings need (tensor storage for
# zero-copy DLPack), as tools/loom/ includes it.
target_include_directories(_core PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(_core PRIVATE loom)
install(TARGETS _core LIBRARY DESTINATION loom COMPONENT python)

# The extension's signatures and docstrings, for editors and type checkers:
# a stub package _core/__init__.pyi + _core/lazy.pyi (the submodule), next to
# the module itself (Python imports the .so; checkers read the stubs);
# py.typed marks the package as typed (PEP 561).
set(LOOM_STUB_DIR ${CMAKE_CURRENT_BINARY_DIR}/stub)
nanobind_add_stub(_core_stub MODULE loom._core RECURSIVE OUTPUT_PATH ${LOOM_STUB_DIR}
                  OUTPUT ${LOOM_STUB_DIR}/_core/__init__.pyi ${LOOM_STUB_DIR}/_core/lazy.pyi
                  PYTHON_PATH ${CMAKE_CURRENT_BINARY_DIR}/stub_path DEPENDS _core)
# stubgen imports loom._core: give it a loom/ package folder holding only the module.
add_custom_command(TARGET _core POST_BUILD
                   COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/stub_path/loom
                   COMMAND ${CMAKE_COMMAND} -E touch ${CMAKE_CURRENT_BINARY_DIR}/stub_path/loom/__init__.py
                   COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE:_core>
                           ${CMAKE_CURRENT_BINARY_DIR}/stub_path/loom/)
install(DIRECTORY ${LOOM_STUB_DIR}/_core DESTINATION loom COMPONENT python)
