// The cpu backend's fused elementwise kernel (chunked interpreter).
#pragma once

#include "backends/backend.h"

namespace loom::backends::cpu {

/// Runs a fused elementwise group chunk by chunk (fused.cpp).
void run_fused_chunked(const FusedCall& call);

}  // namespace loom::backends::cpu
