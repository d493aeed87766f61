// The eager `cpu` device through the same path as the lazy one: each op
// runs as a one-node Program that the backend compiled once per op
// signature (op kind, attributes, operand types) and that stays cached
// (an LRU of LOOM_EAGER_CACHE_SIZE entries, default 4096), so an op is
// written once — a kernel behind Backend::compile — and every device gets
// it. No passes run (eager calls the op's kernel, as before).
#pragma once

#include <vector>

#include "backends/backend.h"
#include "core/buffer.h"
#include "ops/attrs.h"

namespace loom::lazy {

/// Runs `op` on `inputs` (host buffers of `types`) on `backend` and returns
/// the result's buffer (`out_type`). Throws what the kernel throws.
/// Counts EagerCompile (a signature compiled) and EagerCachedCompile.
BufferPtr run_eager(const backends::Backend& backend, ops::OpKind op, std::vector<BufferPtr> inputs,
                    const std::vector<ops::TensorType>& types, const ops::Attrs& attrs,
                    const ops::TensorType& out_type);

/// Empties the eager cache (tests; lazy::clear_compile_cache calls it).
void clear_eager_cache();

}  // namespace loom::lazy
