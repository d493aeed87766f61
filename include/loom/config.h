// The fields every Hugging Face transformers config has (PretrainedConfig in
// transformers' configuration_utils.py), shared by the model configs, each
// declared in its model's header: GPT2Config (loom/gpt2_config.h), BertConfig
// (loom/bert_config.h), LlamaConfig (loom/llama_config.h). A model config is
// read from and written to `config.json` with transformers' field names and
// defaults; keys loom does not know are kept verbatim and written back, so a
// config survives a load/save round trip. What the model registry needs of a
// config is the concept loom::ModelConfig (loom/model_config.h). A model config
// derives from ModelConfigBase<Self> below, which writes from_json_file and save
// once over the config's own from_json_string / to_json_string (those come from
// its field table, src/io/config_fields.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace loom {

/// The fields every transformers config has (PretrainedConfig).
struct PretrainedConfig {
  /// "gpt2", "bert", ...
  std::string model_type;
  /// Class names the weights were saved from, e.g. {"GPT2LMHeadModel"}.
  std::vector<std::string> architectures;
  /// Classification labels: id -> name; num_labels() is its size. Defaults to
  /// {0: "LABEL_0", 1: "LABEL_1"} as transformers does.
  std::map<int64_t, std::string> id2label = {{0, "LABEL_0"}, {1, "LABEL_1"}};
  /// "regression", "single_label_classification",
  /// "multi_label_classification" or empty (inferred from the labels).
  std::string problem_type;
  /// Output embeddings share the input embeddings' weight.
  bool tie_word_embeddings = true;
  std::optional<int64_t> bos_token_id, eos_token_id, pad_token_id;
  /// Every id of eos_token_id when config.json gives a list (Llama 3:
  /// [128001, 128008, 128009]), as transformers accepts; eos_token_id is then
  /// its first. Empty for a single id (or none).
  std::vector<int64_t> eos_token_ids;
  /// Keys loom does not interpret: name -> the value's JSON text (compact).
  std::map<std::string, std::string> extra;

  int64_t num_labels() const { return static_cast<int64_t>(id2label.size()); }
  /// Sets id2label to {0: "LABEL_0", ..., n-1: "LABEL_<n-1>"}.
  void set_num_labels(int64_t n);
};

/// Reads a config file's text; throws loom::Error "[config] <path>: cannot read (<reason>)".
std::string read_config_file(const std::string& path);
/// Writes `text` to `path` via a temporary file and rename; throws loom::Error on I/O failure.
void write_config_file(const std::string& path, const std::string& text);

/// The base of a model config (CRTP: `struct GPT2Config : ModelConfigBase<GPT2Config>`):
/// the file functions, written once over Derived's
/// `static Derived from_json_string(text, where)` and `std::string to_json_string() const`.
template <typename Derived>
struct ModelConfigBase : PretrainedConfig {
  /// Reads `path`; throws loom::Error "[config] <path>: ..." when it cannot be
  /// read, plus the errors of Derived::from_json_string.
  static Derived from_json_file(const std::string& path) {
    return Derived::from_json_string(read_config_file(path), path);
  }
  /// Writes to_json_string() to `path` atomically; throws loom::Error on I/O failure.
  void save(const std::string& path) const {
    write_config_file(path, static_cast<const Derived&>(*this).to_json_string());
  }
};

/// The "model_type" of a config.json file ("" when absent); throws
/// loom::Error "[config] <path>: ..." when unreadable or not a JSON object.
std::string read_model_type(const std::string& path);

}  // namespace loom
