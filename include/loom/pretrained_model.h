// Pretrained transformer models with Hugging Face names, files and numbers:
// the shared base class (forward on named inputs, save_pretrained) and the
// from_pretrained loader. loom/models.h adds the task interfaces
// (loom/causal_lm.h) and the model classes (loom/gpt2.h, bert.h, llama.h).
//
//   auto model = loom::GPT2LMHeadModel::from_pretrained("gpt2", loom::Device("lazy"));
//   model->train();
//   loom::ModelInputs in;
//   in.input_ids = ids;             // [B,T] i64
//   in.attention_mask = mask;       // [B,T], 1 = token, 0 = padding
//   in.labels = ids;                // shifted inside the model, -100 ignored
//   loom::ModelOutput out = model->forward(in);
//   out.loss.backward();
//   model->save_pretrained("out");  // config.json + model.safetensors, atomically
//
// Directory layout (transformers' save_pretrained): config.json, and either
// model.safetensors or shards model-0000k-of-0000N.safetensors with
// model.safetensors.index.json. Tied weights (GPT-2's lm_head.weight, BERT's
// MLM decoder) are stored once and re-tied on load.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/config.h"
#include "loom/model_config.h"
#include "loom/lazy.h"  // lazy::RematScope, which the models open per layer
#include "loom/nn.h"

namespace loom {

/// A model's inputs, by transformers' argument names. Undefined = not given.
struct ModelInputs {
  Tensor input_ids;       // [B,T] i64 (or i32), token ids
  Tensor attention_mask;  // [B,T], 1 (or true) = attend, 0 = padding
  Tensor token_type_ids;  // [B,T] segment ids (BERT; GPT-2 adds wte(token_type_ids))
  Tensor position_ids;    // [B,T] or [1,T]; arange(T) when undefined
  Tensor labels;          // LM: [B,T] i64 with -100 ignored; classification: [B]
};

/// A model's outputs (undefined when not computed).
struct ModelOutput {
  Tensor loss;               // [] f32, when labels were given
  Tensor logits;             // [B,T,V] for LM heads, [B,num_labels] for classification
  Tensor last_hidden_state;  // [B,T,C]
  Tensor pooler_output;      // [B,C] (BertModel with pooler)
};

/// What from_pretrained matched (transformers' loading_info).
struct LoadInfo {
  std::vector<std::string> missing_keys;     // initialized at random (fresh heads)
  std::vector<std::string> unexpected_keys;  // in the files but not in the model; ignored
};

struct PretrainedOptions {
  /// Throw instead of warning when a key is missing or unexpected.
  bool strict = false;
  /// Print missing/unexpected keys to stderr, as transformers warns.
  bool warn = true;
  /// When set, receives the keys that did not match.
  LoadInfo* info = nullptr;
};

/// transformers' save_pretrained default max_shard_size ("50GB", decimal).
inline constexpr int64_t kDefaultMaxShardSize = 50'000'000'000;

/// Base class of the model classes: named inputs in, named outputs out.
class PretrainedModel : public nn::Module {
 public:
  virtual ModelOutput forward(const ModelInputs& inputs) = 0;
  ModelOutput operator()(const ModelInputs& inputs) { return forward(inputs); }

  /// The transformers class name written to config.json "architectures".
  virtual std::string architecture() const = 0;
  /// The attribute holding the base model in head models ("transformer",
  /// "bert"); the base model class itself has none of its keys under it.
  virtual std::string base_model_prefix() const = 0;
  /// True for the base model class (GPT2Model, BertModel).
  virtual bool is_base_model() const = 0;
  /// config.json text, with "architectures" set to {architecture()}.
  virtual std::string config_json() const = 0;
  /// Key suffixes ignored when unexpected in a checkpoint (old buffers such
  /// as GPT-2's "attn.bias"; transformers' _keys_to_ignore_on_load_unexpected).
  virtual std::vector<std::string> ignored_checkpoint_keys() const { return {}; }
  /// Initializes the parameters `select` accepts (dotted names) as
  /// transformers' _init_weights does, drawing from loom's generator.
  virtual void init_weights(const std::function<bool(const std::string&)>& select) = 0;
  void init_weights() {
    init_weights([](const std::string&) { return true; });
  }

  /// Writes config.json and the weights (tied weights once, as f32/bf16/f16
  /// as they are) into `dir`, sharded at `max_shard_size` bytes (see
  /// io::write_pretrained_dir: atomic; other files of an existing `dir` are
  /// kept). Syncs lazy parameters. Throws loom::Error "[save_pretrained] ...".
  /// A PEFT model (loom/lora.h) writes its adapter instead.
  virtual void save_pretrained(const std::string& dir,
                               int64_t max_shard_size = kDefaultMaxShardSize) const;
  /// Loads back what save_pretrained wrote to `dir` (Trainer resume,
  /// load_best_model_at_end): detail::load_pretrained_weights, or a PEFT
  /// model's adapter. Throws loom::Error as those do.
  virtual void load_saved_weights(const std::string& dir, const Device& device,
                                  const PretrainedOptions& options);
  /// The weights file save_pretrained writes ("model.safetensors", PEFT's
  /// "adapter_model.safetensors"), which a complete checkpoint must hold.
  virtual std::string saved_weights_file() const { return "model.safetensors"; }

  /// transformers' gradient_checkpointing_enable() / _disable() (docs/remat.md):
  /// with it on, every decoder layer's forward is traced on a lazy device as one
  /// checkpointed call (lazy::RematScope) while the model trains with grad
  /// enabled, and the compiler recomputes each layer's activations in backward
  /// instead of keeping them: the same losses and gradients bit for bit, less
  /// memory, about one more forward of compute. Sets it here and on every
  /// PretrainedModel submodule (a head's base model, a PEFT model's base).
  void gradient_checkpointing_enable(bool on = true);
  void gradient_checkpointing_disable() { gradient_checkpointing_enable(false); }
  bool is_gradient_checkpointing() const { return gradient_checkpointing_; }

 protected:
  /// Whether a decoder layer's forward opens a RematScope now: enabled, in
  /// training mode and with grad enabled (transformers checkpoints only then).
  bool checkpoint_layers() const;

 private:
  bool gradient_checkpointing_ = false;
};

namespace detail {
/// Loads `dir`'s weights into `model` (see from_pretrained), then moves it to
/// `device` and sets eval mode.
void load_pretrained_weights(PretrainedModel& model, const std::string& dir, const Device& device,
                             const PretrainedOptions& options);
/// Throws loom::Error "[from_pretrained] <dir>: shape mismatch: <tensor>
/// (checkpoint <shape>, model <shape>); config.json's <fields> disagree ..."
/// for the first of `want` whose checkpoint tensor (found by name suffix)
/// has another shape; tensors absent from `dir` are skipped.
void check_config_tensors(const std::string& dir, const std::vector<ConfigTensor>& want);
/// Checks made before a model for `dir` is allocated: validate(), the
/// config's parameter count x 4 bytes (f32) against the memory available
/// (check_parameters_fit), and the sizes the config sets (config_tensors())
/// against the shapes of `dir`'s checkpoint tensors. Throws loom::Error
/// "[from_pretrained] <dir>: ..." naming the tensor and both shapes, or the
/// sizes and the memory.
template <ModelConfig C>
void check_pretrained_sizes(const std::string& dir, const C& config) {
  config.validate();
  check_config_fits("[from_pretrained] " + dir + ": config.json's", config);
  check_config_tensors(dir, config.config_tensors());
}
}  // namespace detail

/// Builds an `M` from `dir`/config.json and loads `dir`'s weights, as
/// transformers' from_pretrained: names with or without the base-model
/// prefix ("transformer." / "bert.") are accepted either way; old names
/// "LayerNorm.gamma" / "LayerNorm.beta" map to ".weight" / ".bias"; tied
/// weights are filled from whichever name is present; f16/bf16 files are
/// converted to the model's f32. Keys missing from the files are
/// initialized at random and reported (an error with options.strict);
/// unexpected keys are ignored and reported (an error with strict). The
/// model is moved to `device` and put in eval mode. Throws loom::Error for a
/// missing/malformed config.json or weight file, a model_type that does not
/// match `M`, a shape mismatch (naming the key and both shapes; sizes set by
/// the config are checked before the model is allocated), a config too large
/// for the available memory, a checkpoint tensor of an integer/bool dtype
/// where the model has a floating one, or a checkpoint that provides none of
/// the model's weights.
template <typename M>
requires ModelConfig<typename M::Config> std::shared_ptr<M> from_pretrained(
    const std::string& dir, const Device& device = {}, const PretrainedOptions& options = {}) {
  auto config = M::Config::from_json_file(dir + "/config.json");
  detail::check_pretrained_sizes(dir, config);  // before anything is allocated
  std::shared_ptr<M> model;
  {
    nn::NoInitGuard no_init;
    model = std::make_shared<M>(config);
  }
  detail::load_pretrained_weights(*model, dir, device, options);
  return model;
}

/// from_pretrained for the class named by config.json's "architectures"
/// (any class of loom/model_registry.h: GPT2LMHeadModel, BertForMaskedLM,
/// LlamaForCausalLM, Qwen2ForCausalLM, ...; the model_type's base model
/// when absent).
/// A PEFT adapter directory (adapter_config.json, as transformers loads one
/// with peft installed) gives the base model of its base_model_name_or_path
/// with the adapter on top (loom::PeftModelForCausalLM, loom/lora.h).
/// Throws loom::Error "[from_pretrained] ..." for an unknown architecture.
std::shared_ptr<PretrainedModel> auto_from_pretrained(const std::string& dir,
                                                      const Device& device = {},
                                                      const PretrainedOptions& options = {});

}  // namespace loom
