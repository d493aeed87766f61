// Checkpoint completeness (train/checkpoint_complete.h): each file the
// resume path reads is present and opens cleanly. The checks reuse the
// readers (TrainerState::from_json_file, io::PretrainedWeights::open,
// safetensors::File::open), so "complete" means exactly "load_checkpoint
// will get past reading its files". A --fsdp checkpoint's optimizer shards
// are checked for their rank, world size and step (fsdp_checkpoint.h).
#include "train/checkpoint_complete.h"

#include <filesystem>

#include "io/pretrained_files.h"
#include "loom/callbacks.h"
#include "loom/error.h"
#include "loom/safetensors.h"
#include "train/checkpoint_files.h"
#include "train/fsdp_checkpoint.h"

namespace loom::train {
namespace fs = std::filesystem;

std::optional<std::string> checkpoint_problem(const std::string& dir) {
  const fs::path d = dir;
  std::error_code ec;
  if (!fs::is_directory(d, ec)) return "not a directory";
  for (const char* f : {"trainer_state.json", "scheduler.json", "rng_state.json"})
    if (!fs::is_regular_file(d / f, ec)) return std::string("no ") + f;
  // The optimizer state: whole (optimizer.safetensors) or sharded (--fsdp:
  // optimizer_shards.json and one optimizer_shard_<rank> per saved rank).
  const bool sharded = fs::is_regular_file(d / kFsdpIndexFile, ec);
  if (!sharded && !fs::is_regular_file(d / "optimizer.safetensors", ec))
    return std::string("no optimizer.safetensors nor ") + kFsdpIndexFile +
           " (saved with save_only_model?)";
  int64_t step = 0;
  try {
    step = TrainerState::from_json_file((d / "trainer_state.json").string()).global_step;
    if (fs::is_regular_file(d / "adapter_model.safetensors", ec)) {
      safetensors::File::open((d / "adapter_model.safetensors").string());  // PEFT adapter
    } else {
      io::PretrainedWeights::open(dir);
    }
    if (!sharded) safetensors::File::open((d / "optimizer.safetensors").string());
  } catch (const Error& e) {
    return std::string(e.what());
  }
  if (sharded) return fsdp_shards_problem(dir, step);
  return std::nullopt;
}

ResumableCheckpoint last_resumable_checkpoint(const std::string& output_dir) {
  ResumableCheckpoint out;
  const std::vector<std::string> all = sorted_checkpoints(output_dir);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (auto problem = checkpoint_problem(*it)) {
      out.skipped.emplace_back(*it, *problem);
      continue;
    }
    out.path = *it;
    break;
  }
  return out;
}

}  // namespace loom::train
