# cmake/LoomDependencies.cmake: finds loom's third-party dependencies. Every
# one comes from a Debian bookworm package that scripts/setup.sh installs; when
# one is missing, configure stops with a line naming that package (not CMake's
# "Could NOT find X"), so a user knows what to apt-get install.
# Assumes the including CMakeLists.txt has called project().

# loom_fail_missing(WHAT DEBIAN_PACKAGE): stop configure naming the package.
function(loom_fail_missing what debian_package)
  message(FATAL_ERROR
    "loom: ${what} was not found. Install the Debian package '${debian_package}' "
    "(apt-get install ${debian_package}), or run scripts/setup.sh, which installs "
    "every package loom needs.")
endfunction()

# loom_require(PACKAGE DEBIAN_PACKAGE [find_package args...]): find_package
# PACKAGE quietly; on failure, name DEBIAN_PACKAGE.
macro(loom_require package debian_package)
  find_package(${package} QUIET ${ARGN})
  if(NOT ${package}_FOUND)
    loom_fail_missing("CMake package '${package}'" "${debian_package}")
  endif()
endmacro()

# loom_require_dnnl(): oneDNN. Debian's libdnnl-dev is built with the OpenCL
# GPU runtime, so its dnnl-config.cmake calls find_package(OpenCL REQUIRED);
# that dependency is checked first so its failure names the OpenCL package
# instead of failing inside oneDNN's config file.
macro(loom_require_dnnl)
  find_file(LOOM_DNNL_CONFIG dnnl-config.cmake PATH_SUFFIXES cmake/dnnl lib/cmake/dnnl
            lib/x86_64-linux-gnu/cmake/dnnl)
  if(NOT LOOM_DNNL_CONFIG)
    loom_fail_missing("oneDNN (dnnl-config.cmake)" "libdnnl-dev")
  endif()
  file(STRINGS "${LOOM_DNNL_CONFIG}" loom_dnnl_gpu_runtime REGEX "DNNL_GPU_RUNTIME \"OCL\"")
  if(loom_dnnl_gpu_runtime)
    find_package(OpenCL QUIET)
    if(NOT OpenCL_FOUND)
      loom_fail_missing("OpenCL (needed by oneDNN's CMake config, built with its OpenCL runtime)"
                        "ocl-icd-opencl-dev")
    endif()
  endif()
  loom_require(dnnl libdnnl-dev)
endmacro()

# loom_require_pkgconfig(PREFIX MODULE DEBIAN_PACKAGE): a pkg-config module as
# the imported target PkgConfig::PREFIX.
macro(loom_require_pkgconfig prefix module debian_package)
  find_package(PkgConfig QUIET)
  if(NOT PkgConfig_FOUND)
    loom_fail_missing("pkg-config" "pkg-config")
  endif()
  pkg_check_modules(${prefix} QUIET IMPORTED_TARGET ${module})
  if(NOT ${prefix}_FOUND)
    loom_fail_missing("pkg-config module '${module}'" "${debian_package}")
  endif()
endmacro()

# loom_find_mpi(MODE): Open MPI for the "mpi" ProcessGroup (src/distributed/).
# MODE (the LOOM_MPI cache variable): ON requires it (naming libopenmpi-dev
# when missing), AUTO uses it when found, OFF never. Sets LOOM_WITH_MPI to 1
# or 0; the build without MPI still has the one-rank group.
macro(loom_find_mpi mode)
  set(LOOM_WITH_MPI 0)
  if(NOT "${mode}" STREQUAL "OFF")
    set(MPI_CXX_SKIP_MPICXX TRUE)  # the C API only: the C++ bindings are deprecated
    find_package(MPI QUIET COMPONENTS CXX)
    if(MPI_CXX_FOUND)
      set(LOOM_WITH_MPI 1)
    elseif("${mode}" STREQUAL "ON")
      loom_fail_missing("MPI (Open MPI's mpi.h and libmpi, for --ddp_backend mpi)" "libopenmpi-dev")
    else()
      message(STATUS "loom: MPI not found: building without --ddp_backend mpi "
                     "(apt-get install libopenmpi-dev openmpi-bin to add it)")
    endif()
  endif()
  find_program(LOOM_MPIEXEC NAMES mpirun mpiexec)
endmacro()

# loom_find_pjrt(): the PJRT C API header (pjrt_c_api.h) for the xla backend
# (src/backends/xla/). It ships in the `xla-cpu-pjrt` wheel, which
# scripts/setup.sh pip-installs into the project's virtual environment
# (.venv/, never into the repository); LOOM_PJRT_INCLUDE_DIR (cache variable
# or environment) names another folder holding it. Sets LOOM_WITH_PJRT to 1
# or 0. Without it loom still builds: the xla backend reports itself
# unavailable (its unavailable_reason()), and its tests skip (fail under CI).
macro(loom_find_pjrt)
  set(LOOM_WITH_PJRT 0)
  if(LOOM_PJRT_INCLUDE_DIR AND NOT EXISTS "${LOOM_PJRT_INCLUDE_DIR}/pjrt_c_api.h")
    unset(LOOM_PJRT_INCLUDE_DIR CACHE)  # the venv went away: look again
  endif()
  set(loom_pjrt_hints "$ENV{LOOM_PJRT_INCLUDE_DIR}")
  file(GLOB loom_pjrt_venv_dirs
       "${PROJECT_SOURCE_DIR}/.venv/lib/python3*/site-packages/xla_plugins/xla_cpu_pjrt/include")
  list(APPEND loom_pjrt_hints ${loom_pjrt_venv_dirs})
  find_path(LOOM_PJRT_INCLUDE_DIR pjrt_c_api.h HINTS ${loom_pjrt_hints} NO_DEFAULT_PATH
            DOC "Folder with the PJRT C API header pjrt_c_api.h (the xla backend)")
  if(LOOM_PJRT_INCLUDE_DIR)
    set(LOOM_WITH_PJRT 1)
    message(STATUS "loom: PJRT C API header: ${LOOM_PJRT_INCLUDE_DIR}/pjrt_c_api.h")
  else()
    message(STATUS "loom: pjrt_c_api.h not found: the xla backend is unavailable in this build "
                   "(scripts/setup.sh pip-installs xla-cpu-pjrt into .venv/, then reconfigure)")
  endif()
endmacro()

# loom_find_parquet(): Apache Arrow C++ and Parquet for .parquet datasets
# (src/io/parquet_rows.cpp), from PyPI's `pyarrow` wheel, which ships
# libarrow.so.<N> and libparquet.so.<N> with their headers; scripts/setup.sh
# pip-installs it into the project's virtual environment (.venv/). Debian
# packages no Arrow. LOOM_PYARROW_DIR (cache variable or environment) names
# another pyarrow folder. The wheel's libraries carry their version in the
# file name (no unversioned .so), so the real files are linked by path and
# the build RPATH holds their folder. LOOM_PARQUET: AUTO (when found; OFF by
# default for the Python package, whose wheel must not depend on this venv),
# ON (required), OFF. Sets LOOM_WITH_PARQUET to 1 or 0; without it loom still
# reads JSON/JSONL, and a .parquet file is an error saying to run setup.sh.
macro(loom_find_parquet mode)
  set(LOOM_WITH_PARQUET 0)
  set(LOOM_PARQUET_LIBRARIES "")
  if(NOT "${mode}" STREQUAL "OFF")
    set(loom_pyarrow_dirs "$ENV{LOOM_PYARROW_DIR}" "${LOOM_PYARROW_DIR}")
    file(GLOB loom_pyarrow_venv "${PROJECT_SOURCE_DIR}/.venv/lib/python3*/site-packages/pyarrow")
    list(APPEND loom_pyarrow_dirs ${loom_pyarrow_venv})
    foreach(dir ${loom_pyarrow_dirs})
      if(dir AND NOT LOOM_WITH_PARQUET AND EXISTS "${dir}/include/parquet/arrow/reader.h")
        file(GLOB loom_arrow_lib "${dir}/libarrow.so.[0-9]*")
        file(GLOB loom_parquet_lib "${dir}/libparquet.so.[0-9]*")
        list(FILTER loom_arrow_lib EXCLUDE REGEX "\\.so\\.[0-9]+\\.[0-9]")
        list(FILTER loom_parquet_lib EXCLUDE REGEX "\\.so\\.[0-9]+\\.[0-9]")
        if(loom_arrow_lib AND loom_parquet_lib)
          list(GET loom_arrow_lib 0 loom_arrow_lib)
          list(GET loom_parquet_lib 0 loom_parquet_lib)
          set(LOOM_WITH_PARQUET 1)
          set(LOOM_PARQUET_INCLUDE_DIR "${dir}/include")
          set(LOOM_PARQUET_LIBRARY_DIR "${dir}")
          set(LOOM_PARQUET_LIBRARIES "${loom_parquet_lib};${loom_arrow_lib}")
        endif()
      endif()
    endforeach()
    if(LOOM_WITH_PARQUET)
      message(STATUS "loom: Parquet through pyarrow's Arrow C++: ${LOOM_PARQUET_LIBRARIES}")
    elseif("${mode}" STREQUAL "ON")
      message(FATAL_ERROR "loom: LOOM_PARQUET=ON but pyarrow's Arrow C++ was not found in "
                          "${PROJECT_SOURCE_DIR}/.venv: run scripts/setup.sh (pip install pyarrow "
                          "into .venv), or set LOOM_PYARROW_DIR")
    else()
      message(STATUS "loom: pyarrow not found in .venv: building without Parquet datasets "
                     "(scripts/setup.sh pip-installs it, then reconfigure)")
    endif()
  endif()
endmacro()
