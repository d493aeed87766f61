// --fsdp and --fsdp_config (see fsdp_options.h). HF's FSDPOption values:
// full_shard, shard_grad_op, no_shard, hybrid_shard, hybrid_shard_zero2,
// offload, auto_wrap (transformers/trainer_utils.py); fsdp_config keys from
// transformers/training_args.py (the "fsdp_" prefix is stripped there too).
#include "train/fsdp_options.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "loom/error.h"
#include "loom/model_registry.h"

namespace loom::train {
namespace {

// What loom says for an fsdp_config key it does not read.
const char* fsdp_config_key_answer(const std::string& key) {
  if (key == "min_num_params") return "loom wraps by layer class only";
  if (key == "activation_checkpointing") return "use --gradient_checkpointing";
  if (key == "offload_params" || key == "cpu_offload")
    return "loom does not offload to the host: the shards stay in device memory (full_shard "
           "holds 1/world_size of the parameters per rank; docs/distributed.md, Flags)";
  if (key == "backward_prefetch" || key == "forward_prefetch")
    return "loom starts every unit's all-gather at the start of the step";
  if (key == "xla" || key == "xla_fsdp_settings" || key == "xla_fsdp_grad_ckpt")
    return "loom's lazy device needs no XLA switch";
  return "loom reads transformer_layer_cls_to_wrap only";
}

// Text starting with '{' is the object itself; anything else is a file name,
// as transformers opens a str fsdp_config (FileNotFoundError when missing).
nlohmann::json fsdp_config_json(const std::string& value) {
  std::string text = value;
  const bool inline_object = value.find_first_not_of(" \t\r\n") != std::string::npos &&
                             value[value.find_first_not_of(" \t\r\n")] == '{';
  if (!inline_object) {
    std::error_code ec;
    LOOM_CHECK(std::filesystem::is_regular_file(value, ec), "[TrainingArguments] fsdp_config: '",
               value, "' is neither a JSON object nor a file holding one (no such file)");
    std::ifstream in(value, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    LOOM_CHECK(in.good() || in.eof(), "[TrainingArguments] fsdp_config: ", value,
               ": cannot read the file");
    text = s.str();
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  LOOM_CHECK(!j.is_discarded() && j.is_object(), "[TrainingArguments] fsdp_config: ",
             inline_object ? "'" + value + "' is not" : "file " + value + " does not hold",
             " a valid JSON object");
  return j;
}

}  // namespace

const char* fsdp_mode_name(FsdpMode mode) {
  switch (mode) {
    case FsdpMode::shard_grad_op:
      return "shard_grad_op";
    case FsdpMode::full_shard:
      return "full_shard";
    case FsdpMode::off:
      break;
  }
  return "off";
}

FsdpMode parse_fsdp_mode(const std::string& value) {
  // HF's string form is space-separated ("full_shard auto_wrap"); its list
  // form (["full_shard", "auto_wrap"] in a config file) reaches here joined
  // by commas (TrainingArguments::from_json, the CLI's config files).
  std::string spaced = value;
  std::replace(spaced.begin(), spaced.end(), ',', ' ');
  std::istringstream words(spaced);
  std::string w;
  FsdpMode mode = FsdpMode::off;
  int modes = 0;
  while (words >> w) {
    if (w == "auto_wrap") continue;
    if (w == "no_shard") {
      ++modes;
      continue;
    }
    if (w == "full_shard" || w == "shard_grad_op") {
      mode = w == "full_shard" ? FsdpMode::full_shard : FsdpMode::shard_grad_op;
      ++modes;
      continue;
    }
    if (w == "hybrid_shard" || w == "hybrid_shard_zero2")
      fail("[TrainingArguments] fsdp: '", w,
           "' is not supported: loom shards over all ranks (use full_shard, or shard_grad_op "
           "for ZeRO-2)");
    if (w == "offload")
      fail(
          "[TrainingArguments] fsdp: 'offload' is not supported yet: loom keeps the shards in "
          "memory (full_shard holds 1/world_size of the parameters per rank)");
    fail("[TrainingArguments] fsdp: unknown option '", w,
         "' (expected full_shard, shard_grad_op, no_shard, auto_wrap)");
  }
  LOOM_CHECK(modes <= 1, "[TrainingArguments] fsdp: '", value,
             "' names more than one of full_shard, shard_grad_op, no_shard");
  return mode;
}

std::string fsdp_layer_class(const std::string& architecture) {
  return layer_class_of_architecture(architecture);  // declared by the model's config
}

std::vector<std::string> check_fsdp_config(const std::string& value) {
  std::vector<std::string> classes;
  if (value.empty()) return classes;
  const nlohmann::json j = fsdp_config_json(value);
  for (const auto& [raw_key, v] : j.items()) {
    const std::string key = raw_key.rfind("fsdp_", 0) == 0 ? raw_key.substr(5) : raw_key;
    if (key != "transformer_layer_cls_to_wrap")
      fail("[TrainingArguments] fsdp_config: key '", raw_key, "' is not supported (",
           fsdp_config_key_answer(key), ")");
    if (v.is_string()) {
      classes.push_back(v.get<std::string>());
    } else {
      LOOM_CHECK(v.is_array(), "[TrainingArguments] fsdp_config: ", raw_key,
                 " must be a string or a list of strings");
      for (const auto& c : v) {
        LOOM_CHECK(c.is_string(), "[TrainingArguments] fsdp_config: ", raw_key,
                   " must be a string or a list of strings");
        classes.push_back(c.get<std::string>());
      }
    }
  }
  return classes;
}

std::vector<std::string> parse_fsdp_config(const std::string& value,
                                           const std::string& layer_class) {
  const std::vector<std::string> classes = check_fsdp_config(value);
  for (const std::string& c : classes)
    LOOM_CHECK(c == layer_class, "[TrainingArguments] fsdp_config: transformer_layer_cls_to_wrap '",
               c, "' is not this model's layer class ('",
               layer_class.empty() ? "unknown" : layer_class,
               "'); loom wraps each decoder layer of the model");
  return classes;
}

FsdpMemory fsdp_memory_per_rank(FsdpMode mode, int64_t world, double trainable, double frozen,
                                double optimizer_copies) {
  const double w = static_cast<double>(world < 1 ? 1 : world), f32 = 4;
  FsdpMemory m;
  if (mode == FsdpMode::off) {
    m.params = m.params_at_rest = f32 * (trainable + frozen);
    m.grads = f32 * trainable;
    m.optimizer = f32 * trainable * optimizer_copies;
    return m;
  }
  m.optimizer = f32 * trainable * optimizer_copies / w;
  if (mode == FsdpMode::full_shard) {
    m.params_at_rest = f32 * (frozen + trainable / w);
    m.params = f32 * (frozen + trainable * (1 + 1 / w));  // a save gathers them whole
    m.grads = f32 * trainable / w;
    return m;
  }
  m.params = m.params_at_rest = f32 * (frozen + trainable * (1 + 1 / w));
  m.grads = f32 * trainable * (1 + 1 / w);
  return m;
}

}  // namespace loom::train
