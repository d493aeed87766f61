// GPT-2 as transformers builds it (transformers/models/gpt2/modeling_gpt2.py):
// token + position embeddings, pre-LayerNorm blocks (ln_1 -> causal
// self-attention with a fused Conv1D c_attn -> residual; ln_2 -> MLP c_fc ->
// gelu_new -> c_proj -> residual), a final ln_f, and an LM head tied to wte.
// Parameter names match transformers' state_dict ("h.0.attn.c_attn.weight",
// "transformer.wte.weight" in the LM model).
//
//   loom::GPT2Config cfg;  cfg.n_layer = 2; cfg.n_embd = 32; cfg.n_head = 4;
//   auto model = std::make_shared<loom::GPT2LMHeadModel>(cfg);   // random init, train mode
//   loom::ModelOutput out = model->forward({.input_ids = ids, .labels = ids});
#pragma once

#include <memory>

#include "loom/causal_lm.h"
#include "loom/gpt2_config.h"

namespace loom {

class GPT2Block;

/// The bare transformer: forward returns last_hidden_state [B,T,n_embd].
class GPT2Model : public PretrainedModel {
 public:
  using Config = GPT2Config;
  /// Validates `config` (GPT2Config::validate) and initializes weights as
  /// transformers does (normal(0, initializer_range); c_proj weights with
  /// initializer_range / sqrt(2 n_layer); LayerNorm 1/0; biases 0) unless
  /// inside nn::NoInitGuard. Starts in training mode.
  explicit GPT2Model(const GPT2Config& config);
  std::string type_name() const override { return "GPT2Model"; }

  /// input_ids [B,T] (T <= n_positions; ids in [0, vocab_size)),
  /// attention_mask [B,T] (keys with 0 are masked for every query),
  /// token_type_ids [B,T] (embedded with wte, as transformers),
  /// position_ids [B,T] or [1,T]. Throws loom::Error "[GPT2Model] ..." for
  /// a missing input_ids, a wrong rank/shape, or T > n_positions.
  ModelOutput forward(const ModelInputs& inputs) override;

  /// Forward over S new tokens with a static key/value cache (transformers'
  /// forward with past_key_values = StaticCache and cache_position):
  /// input_ids [B,S] (B = cache.batch_size()); cache_position [S] i64 on the
  /// model's device, the absolute positions of the tokens (for wpe and as
  /// the cache rows written). Each token attends to every cache row <= its
  /// position, so the result equals forward() on the whole sequence so far.
  /// No padding mask: all B rows have the same length. Returns
  /// last_hidden_state [B,S,n_embd]. Throws loom::Error "[GPT2Model] ..." for
  /// bad input_ids, a cache_position that is not [S], or a cache whose layer
  /// count, batch or length (> n_positions) does not fit.
  ModelOutput forward_with_cache(const Tensor& input_ids, const Tensor& cache_position,
                                 StaticCache& cache);
  /// A zeroed StaticCache for this model on its device and dtype:
  /// [batch_size, n_head, max_cache_len, n_embd / n_head] per layer. Throws
  /// loom::Error unless 1 <= max_cache_len <= n_positions.
  StaticCache new_static_cache(int64_t batch_size, int64_t max_cache_len) const;

  std::string architecture() const override { return "GPT2Model"; }
  std::string base_model_prefix() const override { return "transformer"; }
  bool is_base_model() const override { return true; }
  std::string config_json() const override;
  std::vector<std::string> ignored_checkpoint_keys() const override;
  void init_weights(const std::function<bool(const std::string&)>& select) override;
  using PretrainedModel::init_weights;

  const GPT2Config& config() const { return config_; }
  nn::Embedding& wte() const { return *wte_; }
  nn::Embedding& wpe() const { return *wpe_; }

  static std::shared_ptr<GPT2Model> from_pretrained(const std::string& dir,
                                                    const Device& device = {},
                                                    const PretrainedOptions& options = {}) {
    return loom::from_pretrained<GPT2Model>(dir, device, options);
  }

 private:
  GPT2Config config_;
  std::shared_ptr<nn::Embedding> wte_, wpe_;
  std::shared_ptr<nn::Dropout> drop_;
  std::shared_ptr<nn::ModuleList> h_;
  std::shared_ptr<nn::LayerNorm> ln_f_;
};

/// GPT2Model + lm_head (Linear n_embd -> vocab_size, no bias; its weight is
/// transformer.wte.weight unless config.tie_word_embeddings is false).
/// With labels, loss = cross_entropy(logits[:, t], labels[:, t+1]) averaged
/// over labels != -100 (transformers' ForCausalLMLoss).
class GPT2LMHeadModel : public CausalLM {
 public:
  using Config = GPT2Config;
  explicit GPT2LMHeadModel(const GPT2Config& config);
  std::string type_name() const override { return "GPT2LMHeadModel"; }
  /// Inputs as GPT2Model::forward plus labels [B,T]; returns logits
  /// [B,T,vocab_size], last_hidden_state, and loss when labels are given.
  ModelOutput forward(const ModelInputs& inputs) override;

  /// GPT2Model::forward_with_cache plus the LM head on the last
  /// `logits_to_keep` positions (0 = all, as transformers' logits_to_keep):
  /// logits [B, min(S, logits_to_keep) or S, vocab_size]. Throws loom::Error
  /// as GPT2Model::forward_with_cache, or for logits_to_keep < 0.
  ModelOutput forward_with_cache(const Tensor& input_ids, const Tensor& cache_position,
                                 StaticCache& cache, int64_t logits_to_keep = 0) override;
  StaticCache new_static_cache(int64_t batch_size, int64_t max_cache_len) const override {
    return transformer_->new_static_cache(batch_size, max_cache_len);
  }
  int64_t vocab_size() const override { return config().vocab_size; }
  int64_t max_positions() const override { return config().n_positions; }
  const PretrainedConfig& pretrained_config() const override { return config(); }

  std::string architecture() const override { return "GPT2LMHeadModel"; }
  std::string base_model_prefix() const override { return "transformer"; }
  bool is_base_model() const override { return false; }
  std::string config_json() const override;
  std::vector<std::string> ignored_checkpoint_keys() const override;
  void init_weights(const std::function<bool(const std::string&)>& select) override;
  using PretrainedModel::init_weights;

  const GPT2Config& config() const { return transformer_->config(); }
  GPT2Model& transformer() const { return *transformer_; }
  nn::Linear& lm_head() const { return *lm_head_; }

  static std::shared_ptr<GPT2LMHeadModel> from_pretrained(const std::string& dir,
                                                          const Device& device = {},
                                                          const PretrainedOptions& options = {}) {
    return loom::from_pretrained<GPT2LMHeadModel>(dir, device, options);
  }

 private:
  std::shared_ptr<GPT2Model> transformer_;
  std::shared_ptr<nn::Linear> lm_head_;
};

}  // namespace loom
