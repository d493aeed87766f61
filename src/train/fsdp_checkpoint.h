// Sharded optimizer state in a checkpoint (--fsdp): every rank writes its own
// optimizer_shard_<rank>.safetensors (Optimizer::save of its shards: the
// layout of docs/optim.md, tensors [shard_numel]), and rank 0 writes
// optimizer_shards.json (FsdpEngine::index_json: mode, world size, segments).
// The model itself is saved whole by rank 0 (HF's FULL_STATE_DICT:
// model.safetensors as without --fsdp). Resuming on the same world size
// loads the rank's own file (bit-exact); on another world size every rank
// reads all the files, joins each segment's state, cuts the old padding and
// takes its new shard. Each shard file names its rank, world size and step
// (fsdp_shard_identity), checked before use. Assumes the checkpoint's directory is readable by
// every rank (a shared file system, as HF).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "loom/optim.h"
#include "train/fsdp.h"

namespace loom::train {

inline constexpr const char* kFsdpIndexFile = "optimizer_shards.json";

/// "optimizer_shard_<rank>.safetensors".
std::string fsdp_shard_file(int64_t rank);

/// The identity a shard file carries in its __metadata__, written by
/// save_checkpoint and checked before any use: "fsdp_rank", "fsdp_world_size"
/// and "global_step" (decimal integers). A shard swapped with another rank's,
/// or copied from another checkpoint or run, no longer matches its place.
std::map<std::string, std::string> fsdp_shard_identity(int64_t rank, int64_t world_size,
                                                       int64_t global_step);

/// Why the sharded optimizer state of checkpoint `dir` cannot be used at
/// `global_step` (trainer_state.json's), or nullopt when it can: the index
/// is missing or malformed, a rank's shard file is missing or does not open
/// (e.g. truncated), or its identity is another rank's, world size's or
/// step's. Shards written before the identity existed (no "fsdp_rank") are
/// accepted unchecked. Reads headers only; never throws.
std::optional<std::string> fsdp_shards_problem(const std::string& dir, int64_t global_step);

/// Loads the sharded optimizer state saved in `dir` at `global_step` into
/// `optimizer` (whose parameters are `engine`'s shards). Throws loom::Error
/// "[fsdp] <dir>: ..." for every fsdp_shards_problem, and when the index
/// names other segments (another model or other trainable parameters).
void load_fsdp_optimizer(const std::string& dir, const FsdpEngine& engine,
                         optim::Optimizer& optimizer, int64_t global_step);

}  // namespace loom::train
