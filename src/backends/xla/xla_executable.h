// XlaExecutable: one loom Program compiled by XLA. The program's graph (after
// loom's generic passes; unfused, unplanned: Capabilities::plans_itself) is
// split at its collectives (collective_split.h) into collective-free stages;
// each stage is lowered to StableHLO (lower/stablehlo.h) and compiled by the
// PJRT plugin (through the on-disk executable cache: xla_compile_cache.h).
// A run executes the stages in order on the device holding the inputs; the
// collectives between stages are staged through host memory (download, the
// cpu backend's kernel over dist::graph_process_group(), upload).
//
// Donation (on unless LOOM_XLA_DONATE=0): each stage's inputs that only
// that stage reads are paired with stage outputs of the same type (the
// nearest such ancestor input first: a parameter with its update) and
// lowered as input/output aliases (`tf.aliasing_output`), so XLA writes a
// training step's new parameters and optimizer state into the old ones'
// memory. The aliases are fixed at compile time. At run time an aliased
// input is donated when donatable[i] and nothing but the run holds its
// buffer (the same veto as KernelExecutable); else the stage consumes
// a private copy of it (never PJRT's non-donatable list: the CPU plugin
// then stops donating the later inputs). After the run each donated input's
// PJRT buffer is checked (PJRT_Buffer_IsDeleted): metrics DonatedBytes
// (really donated), DonationDeclinedBytes (the plugin kept it),
// DonationVetoed / DonationVetoCopyBytes (loom copied). Off, every output is
// a new buffer and the old state is freed when the step no longer holds it:
// device memory is still flat from step to step, with the state held twice
// during a step.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/executable.h"
#include "backends/xla/collective_split.h"
#include "backends/xla/pjrt_client.h"

namespace loom::backends::xla {

class XlaBackend;

class XlaExecutable final : public Executable {
 public:
  /// Lowers and compiles every stage; throws loom::Error "[xla] cannot
  /// lower <op> ..." or PJRT's compile diagnostic.
  XlaExecutable(const XlaBackend& backend, std::shared_ptr<const compiler::Program> program);
  /// The same, with each stage loaded from `serialized` (serialize()'s
  /// bytes for this program, written by this plugin build) instead of
  /// compiled; the stages are still split and lowered (milliseconds), so
  /// stage_mlir() holds. Throws loom::Error "[xla] cannot load a serialized
  /// executable: ..." for bytes of another format, another stage count, or
  /// stages that return other types than the program's.
  XlaExecutable(const XlaBackend& backend, std::shared_ptr<const compiler::Program> program,
                const std::string& serialized);

  /// Runs the stages (and the collectives between them) on the inputs'
  /// device; all inputs must be on one device. Waits for the results.
  std::vector<BufferPtr> run(std::vector<BufferPtr> inputs,
                             const std::vector<bool>& donatable) override;
  /// XLA's compiled memory stats summed over the stages
  /// (PJRT_Executable_GetCompiledMemoryStats): planned_peak_bytes (temp +
  /// outputs not aliased), temp_bytes, output_bytes, alias_bytes, and the
  /// stage and collective counts.
  MemoryReport memory_report() const override;
  /// "loom-xla-stages 1\n<n>\n", then per stage "<bytes>\n" and the
  /// plugin's serialized executable (PJRT_Executable_Serialize; 0 bytes for
  /// an empty stage).
  std::string serialize() const override;

  int num_stages() const { return static_cast<int>(stages_.size()); }
  /// The StableHLO text of stage `k` ("" for an empty stage).
  const std::string& stage_mlir(int k) const { return stages_[k].mlir; }
  /// Per stage: (stage input, stage output) pairs lowered as aliases.
  const std::vector<std::pair<int, int>>& stage_aliases(int k) const { return stages_[k].aliases; }

 private:
  struct Stage {
    SplitStage split;
    std::vector<std::pair<int, int>> aliases;
    std::vector<bool> aliased;  // per stage input: donated to an output
    std::unique_ptr<PjrtExecutable> exe;
    std::string mlir;
    // The bytes `exe` was loaded from ("" when compiled here): what
    // serialize() gives again, since the CPU plugin's serialization of a
    // loaded executable does not run ("Function ... not found").
    std::string loaded_from;
  };
  void build_stages(const std::vector<std::string>* serialized);
  void choose_aliases(Stage& st, const std::vector<int>& readers) const;
  void plan_releases();
  void run_stage(Stage& st, std::vector<BufferPtr>& vals, const std::vector<bool>& donatable,
                 int device) const;
  void run_collective(int v, std::vector<BufferPtr>& vals, int device) const;
  void release(int event, std::vector<BufferPtr>& vals) const;

  const XlaBackend& xla_;
  std::vector<Stage> stages_;
  std::vector<std::vector<int>> before_;      // per stage: collectives run right before it
  std::vector<std::vector<int>> release_at_;  // per event (2k: boundary k, 2k+1: stage k)
  std::mutex run_mu_;
};

}  // namespace loom::backends::xla
