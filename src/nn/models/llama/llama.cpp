// The Llama family (loom/llama.h), following transformers' modeling_llama.py
// module by module so parameter names and arithmetic order match:
// LlamaRMSNorm (f32 mean of squares, rsqrt, times weight), LlamaAttention
// (q/k/v projections -> Qwen3's per-head q_norm/k_norm (qwen3/modeling_qwen3.py) ->
// rotary -> optional StaticCache write -> key/value
// heads shared by groups of query heads inside the attention op -> o_proj),
// LlamaMLP (down(act(gate(x)) * up(x))), LlamaDecoderLayer (pre-norm
// residuals), LlamaModel, LlamaForCausalLM. One forward per layer: the cache
// is a null pointer when absent.
#include "loom/llama.h"

#include <cmath>

#include "loom/error.h"
#include "nn/models/init_weights.h"
#include "nn/models/llama/rotary.h"

namespace loom {

class LlamaRMSNorm : public nn::Module {
 public:
  LlamaRMSNorm(int64_t dim, double eps) : eps_(eps) {
    weight_ = register_parameter("weight", ones({dim}));
  }
  std::string type_name() const override { return "LlamaRMSNorm"; }
  const Tensor& weight() const { return param(weight_); }
  // x [..., C] -> [..., C]: weight * (x / sqrt(mean(x^2) + eps)), in f32.
  Tensor forward(const Tensor& x) const {
    Tensor h = cast(x, DType::f32);
    Tensor variance = mean(h * h, {-1}, /*keepdim=*/true);
    h = h * rsqrt(variance + eps_);
    return weight() * cast(h, x.dtype());
  }

 private:
  double eps_;
  size_t weight_ = 0;
};

namespace {

// What every layer needs for one forward: rotary cos/sin [b,T,1,D], the
// attention mask and whether it is causal, and the cache (null: none).
struct LayerContext {
  Tensor cos, sin;
  Tensor mask;  // [B,1,1,T] padding keys, or the cache mask [1,1,S,L]; may be undefined
  bool causal = true;
  StaticCache* cache = nullptr;
  Tensor cache_position;
};

class LlamaAttention : public nn::Module {
 public:
  LlamaAttention(const LlamaConfig& c, int64_t layer_idx)
      : heads_(c.num_attention_heads),
        kv_heads_(c.kv_heads()),
        dim_(c.head_size()),
        layer_(layer_idx) {
    auto linear = [&](const char* name, int64_t out, int64_t in, bool bias) {
      return register_module(name, std::make_shared<nn::Linear>(in, out, bias));
    };
    q_proj_ = linear("q_proj", heads_ * dim_, c.hidden_size, c.qkv_bias());
    k_proj_ = linear("k_proj", kv_heads_ * dim_, c.hidden_size, c.qkv_bias());
    v_proj_ = linear("v_proj", kv_heads_ * dim_, c.hidden_size, c.qkv_bias());
    o_proj_ = linear("o_proj", c.hidden_size, heads_ * dim_, c.o_bias());
    if (c.qk_norm()) {  // Qwen3: one RMSNorm over head_dim, shared by all heads
      q_norm_ = register_module("q_norm", std::make_shared<LlamaRMSNorm>(dim_, c.rms_norm_eps));
      k_norm_ = register_module("k_norm", std::make_shared<LlamaRMSNorm>(dim_, c.rms_norm_eps));
    }
  }
  std::string type_name() const override { return "LlamaAttention"; }

  // x [B,T,C] -> [B,T,C]
  Tensor forward(const Tensor& x, const LayerContext& ctx) const {
    int64_t b = x.size(0), t = x.size(1);
    auto project = [&](const nn::Linear& p, int64_t heads, const LlamaRMSNorm* norm) {
      Tensor h = reshape(p.forward(x), {b, t, heads, dim_});  // [B,T,h,D]
      return norm ? norm->forward(h) : h;
    };
    Tensor q = apply_rotary(project(*q_proj_, heads_, q_norm_.get()), ctx.cos, ctx.sin);
    Tensor k = apply_rotary(project(*k_proj_, kv_heads_, k_norm_.get()), ctx.cos, ctx.sin);
    Tensor v = project(*v_proj_, kv_heads_, nullptr);
    q = transpose(q, 1, 2);  // [B,H,T,D]
    k = transpose(k, 1, 2);  // [B,Hkv,T,D]
    v = transpose(v, 1, 2);
    if (ctx.cache) std::tie(k, v) = ctx.cache->update(layer_, k, v, ctx.cache_position);
    // k, v keep their kv heads: the attention op reads each kv head for its
    // group of query heads in place (transformers' repeat_kv, without the copy).
    Tensor a = scaled_dot_product_attention(q, k, v, ctx.mask, ctx.causal,
                                            1.0 / std::sqrt(static_cast<double>(dim_)));
    return o_proj_->forward(reshape(transpose(a, 1, 2), {b, t, heads_ * dim_}));
  }

 private:
  int64_t heads_, kv_heads_, dim_, layer_;
  std::shared_ptr<nn::Linear> q_proj_, k_proj_, v_proj_, o_proj_;
  std::shared_ptr<LlamaRMSNorm> q_norm_, k_norm_;  // null unless config.qk_norm()
};

class LlamaMLP : public nn::Module {
 public:
  explicit LlamaMLP(const LlamaConfig& c) : act_(c.hidden_act) {
    int64_t h = c.hidden_size, m = c.intermediate_size;
    gate_proj_ = register_module("gate_proj", std::make_shared<nn::Linear>(h, m, c.mlp_bias));
    up_proj_ = register_module("up_proj", std::make_shared<nn::Linear>(h, m, c.mlp_bias));
    down_proj_ = register_module("down_proj", std::make_shared<nn::Linear>(m, h, c.mlp_bias));
  }
  std::string type_name() const override { return "LlamaMLP"; }
  Tensor forward(const Tensor& x) const {
    return down_proj_->forward(nn::activation(act_, gate_proj_->forward(x)) * up_proj_->forward(x));
  }

 private:
  std::string act_;
  std::shared_ptr<nn::Linear> gate_proj_, up_proj_, down_proj_;
};

}  // namespace

class LlamaDecoderLayer : public nn::Module {
 public:
  LlamaDecoderLayer(const LlamaConfig& c, int64_t layer_idx) {
    self_attn_ = register_module("self_attn", std::make_shared<LlamaAttention>(c, layer_idx));
    mlp_ = register_module("mlp", std::make_shared<LlamaMLP>(c));
    input_layernorm_ = register_module(
        "input_layernorm", std::make_shared<LlamaRMSNorm>(c.hidden_size, c.rms_norm_eps));
    post_attention_layernorm_ = register_module(
        "post_attention_layernorm", std::make_shared<LlamaRMSNorm>(c.hidden_size, c.rms_norm_eps));
  }
  std::string type_name() const override { return "LlamaDecoderLayer"; }
  Tensor forward(const Tensor& x, const LayerContext& ctx) const {
    Tensor h = x + self_attn_->forward(input_layernorm_->forward(x), ctx);
    return h + mlp_->forward(post_attention_layernorm_->forward(h));
  }

 private:
  std::shared_ptr<LlamaAttention> self_attn_;
  std::shared_ptr<LlamaMLP> mlp_;
  std::shared_ptr<LlamaRMSNorm> input_layernorm_, post_attention_layernorm_;
};

// ---- LlamaModel ----

LlamaModel::LlamaModel(const LlamaConfig& config) : config_(config) {
  config_.validate();
  check_parameters_fit("[LlamaModel]", config_.parameter_count(false), config_.size_text());
  {
    nn::NoInitGuard no_init;
    const LlamaConfig& c = config_;
    embed_tokens_ = register_module(
        "embed_tokens",
        std::make_shared<nn::Embedding>(c.vocab_size, c.hidden_size, c.pad_token_id));
    layers_ = register_module("layers", std::make_shared<nn::ModuleList>());
    for (int64_t i = 0; i < c.num_hidden_layers; ++i)
      layers_->push_back(std::make_shared<LlamaDecoderLayer>(c, i));
    norm_ = register_module("norm", std::make_shared<LlamaRMSNorm>(c.hidden_size, c.rms_norm_eps));
    rotary_emb_ = register_module("rotary_emb", std::make_shared<LlamaRotaryEmbedding>(c));
  }
  if (!nn::NoInitGuard::active()) init_weights();
}

ModelOutput LlamaModel::forward(const ModelInputs& in) {
  const char* name = "LlamaModel";
  models::check_input_ids(in.input_ids, name);
  LOOM_CHECK(!in.token_type_ids.defined(), "[LlamaModel] token_type_ids are not an input of ",
             config_.model_type, " models");
  models::check_ids_like(in.position_ids, in.input_ids, "position_ids", name, true);
  int64_t t = in.input_ids.size(1);
  Tensor pos = in.position_ids.defined()
                   ? in.position_ids
                   : reshape(arange(t, DType::i64, in.input_ids.device()), {1, t});
  LOOM_CHECK(!in.attention_mask.defined() || in.attention_mask.dim() == 2,
             "[LlamaModel] attention_mask ", to_string(in.attention_mask.shape()),
             " must be [B, T]");
  // Position ids without an attention mask: packed sequences (padding-free
  // batches), each attending only to itself, as transformers detects them.
  const Tensor mask = in.attention_mask.defined() || !in.position_ids.defined()
                          ? in.attention_mask
                          : models::packed_sequence_mask(in.position_ids, t);
  ModelOutput out;
  out.last_hidden_state = forward_hidden(in.input_ids, pos, mask, nullptr, Tensor());
  return out;
}

Tensor LlamaModel::forward_hidden(const Tensor& input_ids, const Tensor& position_ids,
                                  const Tensor& attention_mask, StaticCache* cache,
                                  const Tensor& cache_position) {
  int64_t b = input_ids.size(0), t = input_ids.size(1);
  LayerContext ctx;
  std::tie(ctx.cos, ctx.sin) = rotary_emb_->forward(position_ids);
  if (cache) {
    ctx.mask = cache->attention_mask(cache_position);  // [1,1,S,L]: causal over the rows
    ctx.causal = false;
    ctx.cache = cache;
    ctx.cache_position = cache_position;
  } else {
    ctx.mask = attention_mask.defined() &&
                       attention_mask.dim() == 4  // forward()'s packed-sequence mask [B,1,T,T]
                   ? attention_mask
                   : models::key_padding_mask(attention_mask, b, t, "LlamaModel");
  }
  Tensor h = embed_tokens_->forward(input_ids);  // [B,T,C]
  for (size_t i = 0; i < layers_->size(); ++i) {
    lazy::RematScope remat(checkpoint_layers());  // gradient checkpointing: one call per layer
    h = layers_->at<LlamaDecoderLayer>(i).forward(h, ctx);
  }
  return norm_->forward(h);
}

StaticCache LlamaModel::new_static_cache(int64_t batch_size, int64_t max_cache_len) const {
  LOOM_CHECK(max_cache_len >= 1 && max_cache_len <= config_.max_position_embeddings,
             "[LlamaModel] max_cache_len ", max_cache_len,
             " must be in [1, max_position_embeddings ", config_.max_position_embeddings, "]");
  const Tensor& w = embed_tokens_->weight();
  return StaticCache(config_.num_hidden_layers, batch_size, config_.kv_heads(), max_cache_len,
                     config_.head_size(), w.dtype(), w.device());
}

std::string LlamaModel::config_json() const {
  LlamaConfig c = config_;
  c.architectures = {architecture()};
  return c.to_json_string();
}

void LlamaModel::init_weights(const std::function<bool(const std::string&)>& select) {
  std::unordered_set<const void*> done;
  models::init_standard_weights(*this, config_.initializer_range, select, done);
  for (auto& [prefix, m] : named_modules())  // LlamaRMSNorm: weight 1 (not a LayerNorm)
    if (auto* n = dynamic_cast<LlamaRMSNorm*>(m); n && select(prefix + ".weight"))
      nn::init_constant_(n->weight(), 1.0);
}

// ---- LlamaForCausalLM ----

LlamaForCausalLM::LlamaForCausalLM(const LlamaConfig& config) {
  {
    nn::NoInitGuard no_init;
    model_ = register_module("model", std::make_shared<LlamaModel>(config));
    lm_head_ = register_module(
        "lm_head", std::make_shared<nn::Linear>(config.hidden_size, config.vocab_size, false));
    if (config.tie_word_embeddings)
      lm_head_->set_parameter("weight", model_->embed_tokens().weight());
  }
  if (!nn::NoInitGuard::active()) init_weights();
}

std::string LlamaForCausalLM::architecture() const {
  return config().class_prefix() + "ForCausalLM";
}

ModelOutput LlamaForCausalLM::forward(const ModelInputs& in) {
  ModelOutput out = model_->forward(in);
  out.logits = lm_head_->forward(out.last_hidden_state);  // [B,T,V]
  if (in.labels.defined()) out.loss = causal_lm_loss(out.logits, in.labels);
  return out;
}

ModelOutput LlamaForCausalLM::forward_with_cache(const Tensor& input_ids,
                                                 const Tensor& cache_position, StaticCache& cache,
                                                 int64_t logits_to_keep) {
  const char* name = "LlamaForCausalLM";
  models::check_input_ids(input_ids, name);
  const LlamaConfig& c = config();
  int64_t b = input_ids.size(0), s = input_ids.size(1);
  LOOM_CHECK(cache.num_layers() == c.num_hidden_layers && cache.batch_size() == b &&
                 cache.max_cache_len() <= c.max_position_embeddings,
             "[", name, "] forward_with_cache: cache of ", cache.num_layers(), " layers, batch ",
             cache.batch_size(), ", max_cache_len ", cache.max_cache_len(), " does not fit ",
             c.num_hidden_layers, " layers, batch ", b, ", max_position_embeddings ",
             c.max_position_embeddings);
  LOOM_CHECK(cache_position.defined() && cache_position.dim() == 1 && cache_position.size(0) == s,
             "[", name, "] forward_with_cache: cache_position must be [", s, "], got ",
             cache_position.defined() ? to_string(cache_position.shape()) : "undefined");
  LOOM_CHECK(logits_to_keep >= 0, "[", name, "] logits_to_keep must be >= 0, got ", logits_to_keep);
  ModelOutput out;
  out.last_hidden_state = model_->forward_hidden(input_ids, reshape(cache_position, {1, s}),
                                                 Tensor(), &cache, cache_position);
  Tensor h = out.last_hidden_state;
  if (logits_to_keep > 0 && logits_to_keep < s) h = slice(h, 1, s - logits_to_keep, s);
  out.logits = lm_head_->forward(h);
  return out;
}

std::string LlamaForCausalLM::config_json() const {
  LlamaConfig c = config();
  c.architectures = {architecture()};
  return c.to_json_string();
}

void LlamaForCausalLM::init_weights(const std::function<bool(const std::string&)>& select) {
  model_->init_weights([&](const std::string& n) { return select("model." + n); });
  if (!config().tie_word_embeddings && select("lm_head.weight"))
    nn::init_normal_(lm_head_->weight(), 0.0, config().initializer_range);
}

}  // namespace loom
