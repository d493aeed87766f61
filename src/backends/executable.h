// Executable: one Program compiled for one backend (Backend::compile), the
// thing the compile cache keeps. An interface: how it runs is the
// backend's. KernelExecutable (kernel_executable.h) runs a schedule of
// kernel calls over loom's memory plan (cpu, sim, reference); XlaExecutable
// (backends/xla/xla_executable.h) runs what XLA compiled.
//
//   auto exe = backend.compile(program);       // once
//   auto outs = exe->run(inputs, donatable);   // every step
//
// Assumes runs of one executable are serialized by its caller (the lazy
// executor thread runs them) or by the executable itself.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "compiler/program.h"
#include "core/buffer.h"

namespace loom::backends {

/// What an executable reports about its memory (lazy_metrics.json
/// "executables", LOOM_DEBUG=1): named byte counts and one summary line.
struct MemoryReport {
  std::vector<std::pair<std::string, int64_t>> values;
  std::string summary;
};

class Executable {
 public:
  Executable(const Backend& backend, std::shared_ptr<const compiler::Program> program)
      : program_(std::move(program)), backend_(backend) {}
  virtual ~Executable() = default;
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  /// The program as the backend got it (after loom's passes and lowering).
  const compiler::Program& program() const { return *program_; }
  const Backend& backend() const { return backend_; }

  /// Runs the program on `inputs` (one buffer per graph input, in the
  /// backend's memory) and returns one buffer per graph output. An output
  /// may take the buffer of the input the program donates to it only when
  /// donatable[i] and nothing but `inputs` holds that buffer (the run-time
  /// veto); else it gets a fresh buffer. Waits for the results. Throws
  /// loom::Error for bad index values, unsupported dtypes and failed
  /// collectives ("[dist] ... timed out").
  virtual std::vector<BufferPtr> run(std::vector<BufferPtr> inputs,
                                     const std::vector<bool>& donatable) = 0;

  /// Named byte counts (planned_peak_bytes first) and a summary line: the
  /// memory plan's, or what the backend's own compiler planned.
  virtual MemoryReport memory_report() const = 0;

  /// The compiled form as bytes, for a cache that outlives the process:
  /// Backend::deserialize(program, bytes) on the same backend and build
  /// restores an executable that runs as this one does, without compiling.
  /// "" where compiling is cheaper than loading: the kernel backends build
  /// their schedule and memory plan from the program in milliseconds (the
  /// lazy device's graph cache keeps the program, lazy/compile_cache.h).
  /// xla: the plugin's serialized executable of every stage
  /// (PJRT_Executable_Serialize), framed (xla_executable.h).
  virtual std::string serialize() const { return {}; }

 protected:
  const std::shared_ptr<const compiler::Program> program_;

 private:
  const Backend& backend_;
};

/// Frees every kernel backend's shared arena (kernel_executable.h; the next
/// run allocates it anew, and counts ArenaAllocatedBytes again). For
/// clear_compile_cache(): call only when no executable is running.
void release_shared_arenas();

}  // namespace loom::backends
