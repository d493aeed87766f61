// retain_freed_memory: glibc malloc policy for a process that runs training
// steps. Large blocks from glibc are fresh mmap'ed pages, so every big
// kernel temporary (a reduction's double accumulators, a dtype copy) would
// be page-faulted and zeroed on every step. This asks glibc to serve every
// block from its heap and keep freed memory (M_MMAP_MAX = 0,
// M_TRIM_THRESHOLD = 2 GiB, M_ARENA_MAX = 1: a thread arena would still
// mmap blocks over 64 MiB), so a step's temporaries reuse the previous
// step's pages (mallopt(3)). Buffers of kLargeBlockBytes and more never
// reach glibc (core/allocator.h: their own mappings and a bounded cache),
// so what this keeps is the small blocks' heap. The lazy device calls it when it starts;
// eager-only programs keep glibc's defaults. No-op without glibc or with
// LOOM_MALLOC_RETAIN=0. Freed memory then stays in the process.
#pragma once

namespace loom {

/// Applies the policy once (later calls do nothing).
void retain_freed_memory();

/// Gives the heap's free pages back to the system (glibc's malloc_trim(0):
/// free chunks anywhere in the heap are released, not only at its top).
/// For the moments after start-up, whose transients (the model built whole,
/// its host copies) the policy above would otherwise keep resident for the
/// whole run. The steps after it fault their small temporaries in again
/// once. No-op without glibc.
void trim_freed_memory();

}  // namespace loom
