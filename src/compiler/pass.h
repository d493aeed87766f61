// Pass: one graph-to-graph rewrite with a name (as XLA's HloPassInterface).
// PassPipeline runs passes in order, the verifier between passes in debug
// builds (or when LOOM_VERIFY=1), and writes the graph after each pass to
// $LOOM_DUMP_IR/<hash>.<n>.<pass>.ir when LOOM_DUMP_IR is set.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace loom::compiler {

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  /// Rewrites `graph` in place; returns true when it changed anything.
  virtual bool run(ir::Graph& graph) = 0;
};

class PassPipeline {
 public:
  PassPipeline& add(std::unique_ptr<Pass> pass);
  /// Runs every pass once, in order; returns true when any changed the graph.
  bool run(ir::Graph& graph) const;

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
};

/// The default pipeline, in pipeline.cpp's order: decompose, algebraic,
/// const_fold, cse, fused_cross_entropy, matmul_batch_sum, cast_hoist,
/// matmul_layout, index_add_fold, dce, remat, collective_schedule,
/// gather_schedule.
/// `supported(op)` says whether the backend that will run the graph has a
/// kernel for `op` (backends::Backend::supports); composite ops it lacks,
/// and those named by LOOM_DECOMPOSE, are decomposed first so the later
/// passes clean the expansion up. Throws loom::Error when LOOM_DECOMPOSE
/// names an unknown or non-composite op.
PassPipeline default_pipeline(std::function<bool(ops::OpKind)> supported);
/// default_pipeline() for a backend with every kernel (only LOOM_DECOMPOSE
/// decomposes anything).
PassPipeline default_pipeline();

std::unique_ptr<Pass> make_dce();
std::unique_ptr<Pass> make_cse();
std::unique_ptr<Pass> make_algebraic();
std::unique_ptr<Pass> make_const_fold();
/// Rewrites each composite op (softmax, log_softmax, layer_norm,
/// cross_entropy, attention) for which `supported(op)` is false into
/// primitive ops with the reference kernels' formulas (max-shifted softmax;
/// biased variance, eps inside the rsqrt; ignore_index and label smoothing;
/// causal/bool/float masks, a fully masked row gives zeros), computed in f32
/// with bf16/f16 cast up and the result cast back, as the cpu kernels do.
/// Ops it cannot rewrite (cross_entropy with C = 0) are left in place, so
/// the backend's "[op] not supported by backend X" error still fires.
std::unique_ptr<Pass> make_decompose(std::function<bool(ops::OpKind)> supported);
/// The composite ops LOOM_DECOMPOSE forces to be decomposed even when the
/// backend has them: a comma-separated list of op names, or "all"; empty when
/// unset. Throws loom::Error "[decompose] LOOM_DECOMPOSE names unknown op 'x'"
/// for a name that is not an op or not a composite op.
std::vector<ops::OpKind> forced_decompositions();
/// Rewrites each language-model head (f32, or bf16 under autocast) with its
/// loss and that loss's
/// backward (matmul(H, W, trans_b) -> cross_entropy, cross_entropy_backward
/// -> the two matmul gradients) into one fused_linear_cross_entropy that
/// never materializes the [N, C] logits (see passes/fused_cross_entropy.cpp
/// for the exact conditions). Only heads with C >= `min_classes` are fused;
/// min_classes <= 0 reads LOOM_FUSED_CE_MIN_CLASSES (default 1024; throws
/// loom::Error when it is not an integer >= 1). Does nothing when
/// `supported(fused_linear_cross_entropy)` is false.
std::unique_ptr<Pass> make_fused_cross_entropy(std::function<bool(ops::OpKind)> supported,
                                               int64_t min_classes = 0);

/// Rewrites sum over the batch axes of a batched matmul(X, Y, trans_a) (a
/// linear layer's weight gradient) into one 2-D GEMM over all batch rows
/// (passes/matmul_batch_sum.cpp).
std::unique_ptr<Pass> make_matmul_batch_sum();

/// Moves each narrowing float cast (f32 -> bf16/f16) above the reshape /
/// permute / expand that feeds it when the cast is that op's one user, and
/// cancels cast(cast(u: bf16, f32), bf16) to u (passes/cast_hoist.cpp).
/// Exact: the rewritten graph computes bit-identical values.
std::unique_ptr<Pass> make_cast_hoist();

/// Folds a permute feeding a batched matmul, or permuting its result, into
/// the matmul's perm_a / perm_b / perm_out attrs, run as a strided GEMM
/// (passes/matmul_layout.cpp for the conditions). Exact. LOOM_MATMUL_LAYOUT=0
/// turns it off.
std::unique_ptr<Pass> make_matmul_layout();

/// Drops the zero buffers of index_add gradients: a sum of slice gradients
/// tiling an axis becomes a concat, add(x, index_add(zeros, ...)) an
/// index_add into x (passes/index_add_fold.cpp).
std::unique_ptr<Pass> make_index_add_fold();
/// Gradient checkpointing (passes/remat.cpp, docs/remat.md): in a graph traced
/// with checkpointed layers (ir::Instr::remat), clones each layer call's
/// activations that backward reads from what the call reads and the values
/// the rest of the forward reads, and emits the clones (and backward ops that
/// need only forward values) just before their first reader. Exact: the
/// clones are the same ops on the same operands. Unmarked graphs are unchanged.
std::unique_ptr<Pass> make_remat();

/// Reorders the instrs of a graph with collectives (kCollective) so that each
/// starts as early as its operands allow and its readers come after every
/// collective (passes/collective_schedule.cpp): collectives by readiness
/// (fewest ancestors first, ties by graph order), a deterministic function of
/// the graph, so every rank issues them in the same order. Values are
/// renumbered; graphs without collectives are unchanged.
std::unique_ptr<Pass> make_collective_schedule();

/// ZeRO-3's per-layer gathers (passes/gather_schedule.cpp, docs/distributed.md):
/// every all_gather of a graph input (a full_shard parameter shard) with the
/// views computed from it is gathered again for each later cluster of its
/// readers (a layer's backward), each copy placed just before its first
/// reader and its all_gather two copies ahead (prefetch), so the gathered
/// parameters live per layer instead of for the whole step. Exact (clones of
/// the same ops); deterministic; graphs without such gathers are unchanged.
std::unique_ptr<Pass> make_gather_schedule();

/// Rebuilds `graph` with every use of value v replaced by replace[v]
/// (replace[v] <= v; identity for unchanged values). Outputs are remapped too.
/// Instrs made dead are kept (run DCE to drop them).
void replace_uses(ir::Graph& graph, const std::vector<int>& replace);

/// Sorts graph's instrs topologically, taking among the ready instrs the one
/// with the lowest (priority[i], i), and renumbers the values (operands and
/// outputs follow). priority has one entry per instr. Returns true when the
/// order changed; throws loom::Error "[schedule] the graph has a cycle".
bool reorder_by_priority(ir::Graph& graph, const std::vector<int64_t>& priority);

}  // namespace loom::compiler
