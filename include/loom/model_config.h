// What the model registry (loom/model_registry.h) and from_pretrained
// (loom/pretrained_model.h) need of a model's config, as a C++20 concept
// checked at compile time: loom::ModelConfig. A config declares it by its
// members, in the model's own folder (src/nn/models/<model>/), so registering
// a model needs no per-model code anywhere else, inside or outside loom:
//
//   struct TinyConfig : loom::PretrainedConfig {
//     int64_t vocab_size = 64, hidden_size = 16, max_position_embeddings = 32;
//     void validate() const;                      // throws loom::Error naming the field
//     static TinyConfig from_json_string(const std::string& text, const std::string& where);
//     std::string to_json_string() const;
//     double parameter_count() const;             // from the config alone
//     std::string size_text() const;              // "hidden_size 16, vocab_size 64"
//     std::vector<loom::ConfigTensor> config_tensors() const;
//     int64_t max_positions() const { return max_position_embeddings; }
//     std::vector<std::string> default_lora_targets() const { return {"q_proj", "v_proj"}; }
//   };
//   static_assert(loom::ModelConfig<TinyConfig>);
//
// The sizes are known before anything is allocated: they let loom refuse a
// config that cannot fit in memory, and a checkpoint whose shapes disagree
// with its config.json, with a clear loom::Error instead of std::bad_alloc or
// the OOM killer (check_parameters_fit; detail::check_pretrained_sizes).
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <vector>

#include "loom/config.h"
#include "loom/shape.h"

namespace loom {

/// A tensor whose shape follows from the config alone, named as in the base
/// model (no "transformer." / "bert." prefix): from_pretrained compares it
/// with the checkpoint's tensor of that name before the model is allocated.
struct ConfigTensor {
  std::string name;    ///< "wte.weight"
  Shape shape;         ///< {vocab_size, n_embd}
  std::string fields;  ///< the config fields that set it, e.g. "vocab_size, n_embd"
};

/// A model's config as the registry needs it:
/// - a PretrainedConfig (model_type, architectures, labels, token ids), default
///   constructible to transformers' defaults, with a `vocab_size` field;
/// - `from_json_string(text, where)` / `to_json_string()` (config.json, unknown
///   keys kept) and `validate()` (throws loom::Error naming the bad field);
/// - `parameter_count()`: the base model's parameters plus an untied LM head,
///   in double so that absurd configs do not overflow;
/// - `size_text()`: the fields that make up the count, for messages;
/// - `config_tensors()`: shapes the config sets (ConfigTensor);
/// - `max_positions()`: the longest sequence the model takes;
/// - `default_lora_targets()`: peft's default target_modules for the type
///   (peft/utils/constants.py), empty when peft has none.
/// Optional (not in the concept): `std::string layer_class() const`, the
/// transformers class of one repeated layer (its `_no_split_modules`, e.g.
/// "LlamaDecoderLayer"), which --fsdp_config's transformer_layer_cls_to_wrap
/// may name; without it that key is refused for the type.
template <typename C>
concept ModelConfig = std::derived_from<C, PretrainedConfig> && std::default_initializable<C> &&
    requires(const C& c, const std::string& text) {
  { C::from_json_string(text, text) } -> std::same_as<C>;
  { c.to_json_string() } -> std::same_as<std::string>;
  c.validate();
  { c.vocab_size } -> std::convertible_to<int64_t>;
  { c.parameter_count() } -> std::same_as<double>;
  { c.size_text() } -> std::same_as<std::string>;
  { c.config_tensors() } -> std::same_as<std::vector<ConfigTensor>>;
  { c.max_positions() } -> std::same_as<int64_t>;
  { c.default_lora_targets() } -> std::same_as<std::vector<std::string>>;
};

/// Throws loom::Error "<prefix> <sizes> make <N> parameters: <bytes> as f32
/// [x copies (<why>)], more than the <M> of memory available (<source>);
/// lower them in config.json or --config_overrides" when parameters x 4
/// bytes x `copies` exceeds the available memory (core/memory_info.h; nothing
/// is checked when the system reports none). `prefix` is e.g. "[GPT2Model]",
/// `sizes` a config's size_text().
void check_parameters_fit(const std::string& prefix, double parameters, const std::string& sizes,
                          double copies = 1, const std::string& why = "the weights");

/// check_parameters_fit for `config`'s parameter_count() and size_text().
template <ModelConfig C>
void check_config_fits(const std::string& prefix, const C& config, double copies = 1,
                       const std::string& why = "the weights") {
  check_parameters_fit(prefix, config.parameter_count(), config.size_text(), copies, why);
}

}  // namespace loom
