// The Llama family as transformers builds it (transformers/models/llama/
// modeling_llama.py; Qwen2 in qwen2/modeling_qwen2.py is the same network with
// q/k/v biases, Qwen3 in qwen3/modeling_qwen3.py with an RMSNorm per query/key head): token
// embeddings, pre-RMSNorm decoder layers (input_layernorm
// -> self-attention with rotary position embeddings and grouped-query heads
// -> residual; post_attention_layernorm -> SwiGLU MLP down(act(gate(x)) *
// up(x)) -> residual), a final norm and an LM head (tied to embed_tokens when
// tie_word_embeddings). Parameter names match transformers' state_dict
// ("model.layers.0.self_attn.q_proj.weight").
//
//   auto lm = loom::LlamaForCausalLM::from_pretrained("tiny-llama", loom::Device("lazy"));
//   loom::ModelOutput out = lm->forward({.input_ids = ids, .labels = ids});  // logits [B,T,V]
//
// Each layer has one forward; the StaticCache is optional (null: attend over
// the given tokens, causal, with the padding mask).
#pragma once

#include <memory>

#include "loom/causal_lm.h"
#include "loom/llama_config.h"

namespace loom {

class LlamaDecoderLayer;
class LlamaRotaryEmbedding;
class LlamaRMSNorm;

/// The bare decoder: forward returns last_hidden_state [B,T,hidden_size].
class LlamaModel : public PretrainedModel {
 public:
  using Config = LlamaConfig;
  /// Validates `config` (LlamaConfig::validate) and initializes weights as
  /// transformers does (Linear/Embedding normal(0, initializer_range), biases
  /// 0, RMSNorm weights 1) unless inside nn::NoInitGuard. Training mode.
  explicit LlamaModel(const LlamaConfig& config);
  std::string type_name() const override { return architecture(); }

  /// input_ids [B,T], attention_mask [B,T] (0 = padding key), position_ids
  /// [B,T] or [1,T] (arange(T) when absent; they drive the rotary angles).
  /// Throws loom::Error "[LlamaModel] ..." for a missing input_ids or a
  /// wrong shape; token_type_ids are rejected (Llama has none).
  ModelOutput forward(const ModelInputs& inputs) override;
  /// One forward for both paths: `cache` null = forward(); otherwise the
  /// tokens sit at rows cache_position [S] of `cache` (see CausalLM).
  /// Returns last_hidden_state [B,S,C].
  Tensor forward_hidden(const Tensor& input_ids, const Tensor& position_ids,
                        const Tensor& attention_mask, StaticCache* cache,
                        const Tensor& cache_position);
  StaticCache new_static_cache(int64_t batch_size, int64_t max_cache_len) const;

  /// "Qwen2Model" / "Qwen3Model" for model_type "qwen2" / "qwen3", else "LlamaModel".
  std::string architecture() const override { return config_.class_prefix() + "Model"; }
  std::string base_model_prefix() const override { return "model"; }
  bool is_base_model() const override { return true; }
  std::string config_json() const override;
  void init_weights(const std::function<bool(const std::string&)>& select) override;
  using PretrainedModel::init_weights;

  const LlamaConfig& config() const { return config_; }
  nn::Embedding& embed_tokens() const { return *embed_tokens_; }

 private:
  LlamaConfig config_;
  std::shared_ptr<nn::Embedding> embed_tokens_;
  std::shared_ptr<nn::ModuleList> layers_;
  std::shared_ptr<LlamaRMSNorm> norm_;
  std::shared_ptr<LlamaRotaryEmbedding> rotary_emb_;
};

/// LlamaModel + lm_head (Linear hidden -> vocab, no bias; tied to
/// model.embed_tokens.weight when config.tie_word_embeddings). With labels,
/// loss = causal_lm_loss(logits, labels). Answers to "LlamaForCausalLM";
/// Qwen2ForCausalLM and Qwen3ForCausalLM are the same class for model_type "qwen2"
/// and "qwen3".
class LlamaForCausalLM : public CausalLM {
 public:
  using Config = LlamaConfig;
  explicit LlamaForCausalLM(const LlamaConfig& config);
  std::string type_name() const override { return architecture(); }
  /// Inputs as LlamaModel::forward plus labels [B,T]; returns logits
  /// [B,T,vocab_size], last_hidden_state, and loss when labels are given.
  ModelOutput forward(const ModelInputs& inputs) override;
  ModelOutput forward_with_cache(const Tensor& input_ids, const Tensor& cache_position,
                                 StaticCache& cache, int64_t logits_to_keep = 0) override;
  StaticCache new_static_cache(int64_t batch_size, int64_t max_cache_len) const override {
    return model_->new_static_cache(batch_size, max_cache_len);
  }
  int64_t vocab_size() const override { return config().vocab_size; }
  int64_t max_positions() const override { return config().max_position_embeddings; }
  const PretrainedConfig& pretrained_config() const override { return config(); }

  /// "Qwen2ForCausalLM" / "Qwen3ForCausalLM" for model_type "qwen2" / "qwen3", else
  /// "LlamaForCausalLM".
  std::string architecture() const override;
  std::string base_model_prefix() const override { return "model"; }
  bool is_base_model() const override { return false; }
  std::string config_json() const override;
  void init_weights(const std::function<bool(const std::string&)>& select) override;
  using PretrainedModel::init_weights;

  const LlamaConfig& config() const { return model_->config(); }
  LlamaModel& model() const { return *model_; }
  nn::Linear& lm_head() const { return *lm_head_; }

  static std::shared_ptr<LlamaForCausalLM> from_pretrained(const std::string& dir,
                                                           const Device& device = {},
                                                           const PretrainedOptions& options = {}) {
    return loom::from_pretrained<LlamaForCausalLM>(dir, device, options);
  }

 private:
  std::shared_ptr<LlamaModel> model_;
  std::shared_ptr<nn::Linear> lm_head_;
};

}  // namespace loom
