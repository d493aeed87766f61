// Sharded data parallel for the Trainer (ZeRO-2 / ZeRO-3, as torch FSDP's
// SHARD_GRAD_OP / FULL_SHARD and DeepSpeed's stages 2 / 3): the trainable
// parameters are cut into segments — one per (unit, optimizer group), a unit
// being a decoder layer ("transformer.h.3") or the root (embeddings, final
// norm, head) — each flattened, padded to a multiple of the world size W and
// split into W equal shards. Rank r owns shard r of every segment: a leaf
// f32 tensor [S] that is the optimizer's parameter (so the AdamW moments,
// and the master weights, are 1/W of DDP's).
//
// A step: backward leaves full gradients in the parameters' .grad;
// reduce_scatter_grads() sends each segment's flat gradient through one
// reduce_scatter(mean) (every rank gets the ranks' mean of its shard: the
// DDP gradient); clip_grad_norm() clips with the exact global norm (the
// all_reduce of the shards' squared norms); the optimizer updates the
// shards; gather_params() all-gathers each segment back into the
// parameters — in the same graph for shard_grad_op, as a pending value
// that every later graph recomputes (never kept whole between steps) for
// full_shard on the lazy device. Frozen parameters (LoRA's base) are not
// sharded: every rank keeps them whole, as DDP.
// Assumes every rank builds the engine from the same model (the start-up
// check) and calls every function in the same order (each may trace a
// collective); parameters are f32 or one floating dtype per segment.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/optim.h"
#include "loom/tensor.h"
#include "train/fsdp_options.h"

namespace loom::train {

/// The unit of a parameter name: its prefix through the first all-digit
/// component ("transformer.h.3.attn.c_attn.weight" -> "transformer.h.3",
/// "base_model.model.model.layers.0.q_proj.lora_A.weight" -> "...layers.0");
/// outside the layers, its module: the name without its last component
/// ("transformer.wte.weight" -> "transformer.wte", "lm_head.weight" ->
/// "lm_head"; a name without a dot is its own unit).
std::string fsdp_unit_of(const std::string& name);

/// One segment: parameters of one unit and one optimizer group.
struct FsdpSegment {
  std::string unit;
  size_t group = 0;  // index into the optimizer's groups
  std::vector<Tensor> params;
  std::vector<std::string> names;
  int64_t numel = 0;        // sum of the parameters' elements
  int64_t shard_numel = 0;  // ceil(numel / W): this rank's part
  DType dtype = DType::f32;
  Tensor shard;  // [shard_numel] leaf requiring grad: elements [r*S, (r+1)*S) of the flat segment
};

class FsdpEngine {
 public:
  /// Segments of `groups` (weight_decay_groups: trainable parameters with
  /// names) for rank `rank` of `world`, shards filled from the parameters.
  /// full_shard on the lazy device then drops the parameters' whole values
  /// (they are gathered inside each step). Throws loom::Error "[fsdp] ..."
  /// for world < 1, a rank outside it, or mixed dtypes in one segment.
  FsdpEngine(FsdpMode mode, const std::vector<optim::ParamGroup>& groups, int64_t world,
             int64_t rank);

  FsdpMode mode() const { return mode_; }
  int64_t world_size() const { return world_; }
  int64_t rank() const { return rank_; }
  /// True when gather_params() leaves pending recipes that no mark_step
  /// keeps (full_shard on the lazy device: the gathered values are
  /// recomputed inside each graph that reads them).
  bool params_stay_pending() const;
  const std::vector<FsdpSegment>& segments() const { return segments_; }
  /// The optimizer's groups: the options of `groups` given to the
  /// constructor, each holding its segments' shards (named "fsdp:<unit>").
  std::vector<optim::ParamGroup> shard_groups(const std::vector<optim::ParamGroup>& groups) const;

  /// Every segment's shard .grad := reduce_scatter(mean) of its flat, padded
  /// gradient (a parameter without .grad gives zeros); the parameters' .grad
  /// are cleared. Traced (one collective per segment).
  void reduce_scatter_grads();
  /// torch's clip_grad_norm_ (L2) over all ranks' shards: total =
  /// sqrt(all_reduce_sum(sum of squares)), grads *= min(max_norm / (total +
  /// 1e-6), 1). Returns total (a pending f32 scalar on the lazy device).
  Tensor clip_grad_norm(double max_norm);
  /// Parameters := the all_gather of the shards (shard_grad_op, and
  /// full_shard off the lazy device: copy_; full_shard lazy: a pending value
  /// mark_step does not keep, see lazy::rebind_unsynced). Call after the
  /// optimizer step, before its mark_step: the recipes then read the updated
  /// shards, and the old shards, referenced by no one, are donated to them.
  void gather_params();
  /// Shards := the parameters' current values (after weights were loaded
  /// into the parameters: a resume); then gather_params for full_shard.
  void load_shards_from_params();
  /// Makes the parameters whole device data on every rank (full_shard: runs
  /// their pending gathers). Before a host read of the weights on one rank
  /// only (rank 0's save), which could not run a collective alone.
  void materialize_params();
  /// Clears the shards' .grad (after the optimizer step).
  void zero_grad();

  /// The checkpoint's index (optimizer_shards.json): mode, world size and
  /// every segment's unit, group, numel, shard_numel and parameter names.
  std::string index_json() const;

 private:
  void fill_shards();

  FsdpMode mode_;
  int64_t world_, rank_;
  std::vector<FsdpSegment> segments_;
};

}  // namespace loom::train
