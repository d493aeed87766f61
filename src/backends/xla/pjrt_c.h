// The PJRT C API header, from the plugin's wheel (CMake finds it in the
// project's .venv or LOOM_PJRT_INCLUDE_DIR; it is never copied into the
// repository). Included only by the files compiled with LOOM_WITH_PJRT.
#pragma once

#include <pjrt_c_api.h>
