// The files of a Hugging Face save_pretrained directory, below the model
// level: reading the weights (one `model.safetensors`, or the shards
// `model-0000k-of-0000N.safetensors` listed by `model.safetensors.index.json`)
// and writing a whole directory atomically (temporary directory, then rename).
// Works on raw bytes (safetensors::TensorRef); knows nothing about tensors.
//
// Index format (transformers' modeling_utils / huggingface_hub
// split_state_dict_into_shards_factory): {"metadata": {"total_parameters": n,
// "total_size": bytes}, "weight_map": {tensor name: shard file name}}.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "loom/safetensors.h"

namespace loom::io {

inline constexpr const char* kWeightsFile = "model.safetensors";
inline constexpr const char* kWeightsIndexFile = "model.safetensors.index.json";
inline constexpr const char* kConfigFile = "config.json";

/// The weights of a save_pretrained directory, memory-mapped.
class PretrainedWeights {
 public:
  struct Entry {
    std::string name;
    size_t file = 0;  // index into files()
    const safetensors::TensorInfo* info = nullptr;
  };

  /// Opens `dir`/model.safetensors, or, when absent, the shards listed by
  /// `dir`/model.safetensors.index.json. Throws loom::Error
  /// "[from_pretrained] <path>: ..." when neither exists (naming what was
  /// looked for; a pytorch_model.bin is mentioned as unsupported), the index
  /// is not JSON / lacks a "weight_map" object of strings / names a file
  /// outside the directory (a '/' or "..") or a missing file / maps a tensor
  /// to a shard that does not hold it, or a tensor appears in two shards;
  /// plus every error of safetensors::File::open.
  static PretrainedWeights open(const std::string& dir);

  /// All tensors, shard by shard in file order.
  const std::vector<Entry>& entries() const { return entries_; }
  /// The bytes of one entry (valid while this object lives).
  std::span<const std::byte> data(const Entry& e) const;
  /// The files read (one, or the shards in name order).
  const std::vector<safetensors::File>& files() const { return files_; }

 private:
  std::vector<safetensors::File> files_;
  std::vector<Entry> entries_;
};

/// How `tensors` are split into shards of at most `max_shard_size` bytes, as
/// huggingface_hub does: in order; a tensor that would tip the current shard
/// over the limit starts a new one; a tensor larger than the limit gets a
/// shard of its own. Returns the tensor indices of each shard.
std::vector<std::vector<size_t>> plan_shards(const std::vector<safetensors::TensorRef>& tensors,
                                             int64_t max_shard_size);

/// Writes a save_pretrained directory: each (file name, text) of `text_files`
/// (config.json, ...), and `tensors` as model.safetensors (one shard) or as
/// model-0000k-of-0000N.safetensors + model.safetensors.index.json, each with
/// metadata {"format": "pt"}. Atomic: everything is written into a temporary
/// sibling directory, which then replaces `dir`; files of an existing `dir`
/// that are not weights or config (tokenizer files, ...) are carried over;
/// a "*.lock" file is hard-linked, not copied, so that an flock(2) held on it
/// (train/output_dir_lock.h) stays held in the new directory.
/// A failure leaves `dir` as it was. Throws loom::Error "[save_pretrained]
/// <dir>: ..." for max_shard_size < 1 or any I/O failure.
void write_pretrained_dir(const std::string& dir,
                          const std::vector<std::pair<std::string, std::string>>& text_files,
                          const std::vector<safetensors::TensorRef>& tensors,
                          int64_t max_shard_size);

}  // namespace loom::io
