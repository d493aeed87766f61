// Sharded optimizer state in a checkpoint (--fsdp): every rank writes its own
// optimizer_shard_<rank>.safetensors (Optimizer::save of its shards: the
// layout of docs/optim.md, tensors [shard_numel]), and rank 0 writes
// optimizer_shards.json (FsdpEngine::index_json: mode, world size, segments).
// The model itself is saved whole by rank 0 (HF's FULL_STATE_DICT:
// model.safetensors as without --fsdp). Resuming on the same world size
// loads the rank's own file (bit-exact); on another world size every rank
// reads all the files, joins each segment's state, cuts the old padding and
// takes its new shard. Assumes the checkpoint's directory is readable by
// every rank (a shared file system, as HF).
#pragma once

#include <string>

#include "loom/optim.h"
#include "train/fsdp.h"

namespace loom::train {

inline constexpr const char* kFsdpIndexFile = "optimizer_shards.json";

/// "optimizer_shard_<rank>.safetensors".
std::string fsdp_shard_file(int64_t rank);

/// Loads the sharded optimizer state saved in `dir` into `optimizer` (whose
/// parameters are `engine`'s shards). Throws loom::Error "[fsdp] <dir>: ..."
/// when the index is missing or malformed, names other segments (another
/// model or other trainable parameters), or a shard file is missing.
void load_fsdp_optimizer(const std::string& dir, const FsdpEngine& engine,
                         optim::Optimizer& optimizer);

}  // namespace loom::train
