// Executable: one Program compiled for one backend — the schedule, the
// backend's kernels for it and its memory plan (compiler/memory/plan.h),
// with runs of independent fused groups launched together
// (compiler/memory/batch.h; off with LOOM_FUSED_BATCH=0).
// The compile cache keeps executables; the planned intermediates live in one
// arena per backend, shared by its executables (grown to the largest plan,
// held under a lock for a run), so a steady-state run allocates only the
// graph outputs that no input was donated to, and memory does not grow with
// the number of cached graphs. Runs are serialized per executable (the lazy
// executor thread runs them) and per backend while they use the arena.
//
//   auto exe = backend.compile(program);       // plans memory once
//   auto outs = exe->run(inputs, donatable);   // every step
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "backends/backend.h"
#include "compiler/memory/batch.h"
#include "compiler/memory/plan.h"

namespace loom::backends {

class Executable {
 public:
  Executable(const Backend& backend, std::shared_ptr<const compiler::Program> program);
  virtual ~Executable() = default;
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  const compiler::Program& program() const { return *program_; }
  const compiler::memory::MemoryPlan& plan() const { return plan_; }
  const Backend& backend() const { return backend_; }

  /// Runs the program on `inputs` (one buffer per graph input, in this
  /// backend's memory) and returns one buffer per graph output. An output
  /// takes its planned donor's buffer only when donatable[i] and nothing
  /// but `inputs` holds that buffer (the run-time veto); else it gets a
  /// fresh buffer. Launches go to the backend's stream and are waited for
  /// before returning. Throws what the kernels throw (loom::Error for bad
  /// index values, unsupported ops or dtypes).
  std::vector<BufferPtr> run(std::vector<BufferPtr> inputs, const std::vector<bool>& donatable);

  /// Bytes of arena this executable's plan needs (the backend's shared
  /// arena is grown to it on its first run).
  size_t arena_bytes() const { return plan_.arena_bytes; }

 protected:
  /// Runs step `s` on the stream with the resolved buffer addresses
  /// (`ptr[v]` for every value the step touches). The default enqueues
  /// one launch per step.
  virtual void launch(const compiler::Step& step, const std::vector<void*>& ptr);
  /// Runs steps [first, first + count) — a batch of independent fused
  /// groups (compiler/memory/batch.h) — as one Backend::run_fused_batch.
  void launch_batch(size_t first, int count, const std::vector<void*>& ptr);

 private:
  void bind_outputs(std::vector<BufferPtr>& own, const std::vector<bool>& donatable);

  const Backend& backend_;
  std::shared_ptr<const compiler::Program> program_;
  compiler::memory::MemoryPlan plan_;
  std::mutex mu_;
  bool needs_arena_ = false;  // some value lives in the arena (maybe 0 bytes)
  std::vector<bool> skip_;    // per step: an alias of the memory plan, not launched
  std::vector<int> batch_;    // per step: plan_fused_batches (1 = runs alone)
  std::vector<std::vector<FusedCall>> batch_calls_;  // per batch head, reused each run
  std::vector<void*> ptr_;                           // per value, rebuilt each run
};

/// Frees every backend's shared arena (the next run allocates it anew, and
/// counts ArenaAllocatedBytes again). For clear_compile_cache(): call only
/// when no executable is running.
void release_shared_arenas();

}  // namespace loom::backends
