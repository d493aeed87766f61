// Whether a checkpoint-<N> directory can be resumed from, and the newest one
// that can (for resume_from_checkpoint "last"). loom's own saves are atomic
// (tmp directory + rename), but a checkpoint copied, synced or edited by
// other tools can arrive incomplete: no trainer_state.json, truncated
// weights (transformers#35782). Assumes the file set of checkpoint_save.cpp.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace loom::train {

/// Why `dir` cannot be resumed from, or nullopt when it can: a file that
/// load_checkpoint needs is missing (trainer_state.json, model.safetensors
/// or its index, optimizer.safetensors — or for a --fsdp checkpoint
/// optimizer_shards.json and its shard files —, scheduler.json,
/// rng_state.json), or trainer_state.json does not parse, or a safetensors
/// file (the weights, each shard, the optimizer state) fails
/// safetensors::File::open (e.g. a truncated file: its header promises more
/// bytes than the file holds), or an optimizer shard's identity is not its
/// place's (train/fsdp_checkpoint.h: fsdp_shards_problem).
/// Only headers are read (the files are memory-mapped), so this is cheap.
/// Never throws for a damaged checkpoint; the reason is the loom::Error text.
std::optional<std::string> checkpoint_problem(const std::string& dir);

/// The newest checkpoint of `output_dir` that checkpoint_problem accepts,
/// and the newer ones passed over, newest first, as (path, reason).
struct ResumableCheckpoint {
  std::optional<std::string> path;
  std::vector<std::pair<std::string, std::string>> skipped;
};
/// Walks sorted_checkpoints(output_dir) from the newest. Throws loom::Error
/// only when output_dir exists but cannot be listed.
ResumableCheckpoint last_resumable_checkpoint(const std::string& output_dir);

}  // namespace loom::train
