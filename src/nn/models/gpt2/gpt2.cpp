// GPT-2 (loom/gpt2.h), following transformers' modeling_gpt2.py module by
// module so parameter names and arithmetic order match: GPT2Attention
// (c_attn -> split q,k,v -> causal attention with the key-padding mask ->
// c_proj -> resid dropout), GPT2MLP (c_fc -> act -> c_proj -> dropout),
// GPT2Block (pre-LN residuals), GPT2Model, GPT2LMHeadModel (ForCausalLMLoss).
// Each layer has one forward; forward_with_cache runs it with a StaticCache
// (loom/kv_cache.h) whose rows cache_position receive the new keys/values.
#include "loom/gpt2.h"

#include <cmath>

#include "loom/error.h"
#include "nn/models/init_weights.h"

namespace loom {

namespace {

// What every block's forward gets: the attention mask and, when decoding
// with a StaticCache, the cache and the rows being written (null: no cache).
struct CacheContext {
  Tensor mask;
  StaticCache* cache = nullptr;
  Tensor cache_position;
};

class GPT2Attention : public nn::Module {
 public:
  GPT2Attention(const GPT2Config& c, int64_t layer_idx) : heads_(c.n_head), pdrop_(c.attn_pdrop) {
    c_attn_ = register_module("c_attn", std::make_shared<nn::Conv1D>(3 * c.n_embd, c.n_embd));
    c_proj_ = register_module("c_proj", std::make_shared<nn::Conv1D>(c.n_embd, c.n_embd));
    attn_dropout_ = register_module("attn_dropout", std::make_shared<nn::Dropout>(c.attn_pdrop));
    resid_dropout_ = register_module("resid_dropout", std::make_shared<nn::Dropout>(c.resid_pdrop));
    scale_ = c.scale_attn_weights ? 1.0 / std::sqrt(static_cast<double>(c.n_embd / c.n_head)) : 1.0;
    if (c.scale_attn_by_inverse_layer_idx) scale_ /= static_cast<double>(layer_idx + 1);
    embd_ = c.n_embd;
    layer_ = layer_idx;
  }
  std::string type_name() const override { return "GPT2Attention"; }

  // x [B,T,C] -> [B,T,C]. Without a cache: causal attention over x with
  // ctx.mask the key-padding mask [B,1,1,T] (or undefined). With one: x's
  // keys/values go to rows ctx.cache_position [T] of this layer's cache and
  // x attends over all its rows with ctx.mask [1,1,T,L].
  Tensor forward(const Tensor& x, const CacheContext& ctx) const {
    std::vector<Tensor> qkv = split(c_attn_->forward(x), embd_, -1);
    Tensor a;
    if (!ctx.cache) {
      nn::AttentionOptions o;
      o.mask = ctx.mask;
      o.causal = true;
      o.scale = scale_;
      o.dropout_p = pdrop_;
      o.training = is_training();
      a = nn::multi_head_attention(qkv[0], qkv[1], qkv[2], heads_, o);
    } else {
      int64_t b = x.size(0), s = x.size(1), d = embd_ / heads_;
      auto heads = [&](const Tensor& t) { return transpose(reshape(t, {b, s, heads_, d}), 1, 2); };
      auto [k, v] = ctx.cache->update(layer_, heads(qkv[1]), heads(qkv[2]), ctx.cache_position);
      a = scaled_dot_product_attention(heads(qkv[0]), k, v, ctx.mask, false, scale_);
      a = reshape(transpose(a, 1, 2), {b, s, embd_});  // [B,H,S,D] -> [B,S,C]
    }
    return resid_dropout_->forward(c_proj_->forward(a));
  }

 private:
  int64_t heads_, embd_ = 0, layer_ = 0;
  double pdrop_, scale_ = 1.0;
  std::shared_ptr<nn::Conv1D> c_attn_, c_proj_;
  std::shared_ptr<nn::Dropout> attn_dropout_, resid_dropout_;
};

class GPT2MLP : public nn::Module {
 public:
  explicit GPT2MLP(const GPT2Config& c) : act_(c.activation_function) {
    c_fc_ = register_module("c_fc", std::make_shared<nn::Conv1D>(c.inner_dim(), c.n_embd));
    c_proj_ = register_module("c_proj", std::make_shared<nn::Conv1D>(c.n_embd, c.inner_dim()));
    dropout_ = register_module("dropout", std::make_shared<nn::Dropout>(c.resid_pdrop));
  }
  std::string type_name() const override { return "GPT2MLP"; }
  Tensor forward(const Tensor& x) const {
    return dropout_->forward(c_proj_->forward(nn::activation(act_, c_fc_->forward(x))));
  }

 private:
  std::string act_;
  std::shared_ptr<nn::Conv1D> c_fc_, c_proj_;
  std::shared_ptr<nn::Dropout> dropout_;
};

}  // namespace

class GPT2Block : public nn::Module {
 public:
  GPT2Block(const GPT2Config& c, int64_t layer_idx) {
    ln_1_ =
        register_module("ln_1", std::make_shared<nn::LayerNorm>(c.n_embd, c.layer_norm_epsilon));
    attn_ = register_module("attn", std::make_shared<GPT2Attention>(c, layer_idx));
    ln_2_ =
        register_module("ln_2", std::make_shared<nn::LayerNorm>(c.n_embd, c.layer_norm_epsilon));
    mlp_ = register_module("mlp", std::make_shared<GPT2MLP>(c));
  }
  std::string type_name() const override { return "GPT2Block"; }
  Tensor forward(const Tensor& x, const CacheContext& ctx) const {
    Tensor h = attn_->forward(ln_1_->forward(x), ctx) + x;
    return h + mlp_->forward(ln_2_->forward(h));
  }

 private:
  std::shared_ptr<nn::LayerNorm> ln_1_, ln_2_;
  std::shared_ptr<GPT2Attention> attn_;
  std::shared_ptr<GPT2MLP> mlp_;
};

// ---- GPT2Model ----

GPT2Model::GPT2Model(const GPT2Config& config) : config_(config) {
  config_.validate();
  check_config_fits("[GPT2Model]", config_);
  {
    nn::NoInitGuard no_init;
    const GPT2Config& c = config_;
    wte_ = register_module("wte", std::make_shared<nn::Embedding>(c.vocab_size, c.n_embd));
    wpe_ = register_module("wpe", std::make_shared<nn::Embedding>(c.n_positions, c.n_embd));
    drop_ = register_module("drop", std::make_shared<nn::Dropout>(c.embd_pdrop));
    h_ = register_module("h", std::make_shared<nn::ModuleList>());
    for (int64_t i = 0; i < c.n_layer; ++i) h_->push_back(std::make_shared<GPT2Block>(c, i));
    ln_f_ =
        register_module("ln_f", std::make_shared<nn::LayerNorm>(c.n_embd, c.layer_norm_epsilon));
  }
  if (!nn::NoInitGuard::active()) init_weights();
}

ModelOutput GPT2Model::forward(const ModelInputs& in) {
  const char* name = "GPT2Model";
  models::check_input_ids(in.input_ids, name);
  models::check_ids_like(in.token_type_ids, in.input_ids, "token_type_ids", name, false);
  models::check_ids_like(in.position_ids, in.input_ids, "position_ids", name, true);
  int64_t b = in.input_ids.size(0), t = in.input_ids.size(1);
  LOOM_CHECK(t <= config_.n_positions || in.position_ids.defined(), "[GPT2Model] sequence length ",
             t, " exceeds n_positions ", config_.n_positions);
  Tensor pos = in.position_ids.defined()
                   ? in.position_ids
                   : reshape(arange(t, DType::i64, in.input_ids.device()), {1, t});
  Tensor h = wte_->forward(in.input_ids) + wpe_->forward(pos);  // [B,T,C]
  if (in.token_type_ids.defined()) h = h + wte_->forward(in.token_type_ids);
  h = drop_->forward(h);
  CacheContext ctx;
  // Position ids without an attention mask: packed sequences (padding-free
  // batches), each attending only to itself, as transformers detects them.
  ctx.mask = in.attention_mask.defined() || !in.position_ids.defined()
                 ? models::key_padding_mask(in.attention_mask, b, t, name)
                 : models::packed_sequence_mask(in.position_ids, t);
  for (size_t i = 0; i < h_->size(); ++i) {
    lazy::RematScope remat(checkpoint_layers());  // gradient checkpointing: one call per block
    h = h_->at<GPT2Block>(i).forward(h, ctx);
  }
  ModelOutput out;
  out.last_hidden_state = ln_f_->forward(h);
  return out;
}

ModelOutput GPT2Model::forward_with_cache(const Tensor& input_ids, const Tensor& cache_position,
                                          StaticCache& cache) {
  const char* name = "GPT2Model";
  models::check_input_ids(input_ids, name);
  int64_t b = input_ids.size(0), s = input_ids.size(1);
  LOOM_CHECK(cache.num_layers() == config_.n_layer && cache.batch_size() == b &&
                 cache.max_cache_len() <= config_.n_positions,
             "[GPT2Model] forward_with_cache: cache of ", cache.num_layers(), " layers, batch ",
             cache.batch_size(), ", max_cache_len ", cache.max_cache_len(), " does not fit ",
             config_.n_layer, " layers, batch ", b, ", n_positions ", config_.n_positions);
  LOOM_CHECK(cache_position.defined() && cache_position.dim() == 1 && cache_position.size(0) == s,
             "[GPT2Model] forward_with_cache: cache_position must be [", s, "], got ",
             cache_position.defined() ? to_string(cache_position.shape()) : "undefined");
  Tensor pos = reshape(cache_position, {1, s});
  Tensor h = drop_->forward(wte_->forward(input_ids) + wpe_->forward(pos));  // [B,S,C]
  CacheContext ctx;
  ctx.mask = cache.attention_mask(cache_position);  // [1,1,S,L]
  ctx.cache = &cache;
  ctx.cache_position = cache_position;
  for (size_t i = 0; i < h_->size(); ++i) h = h_->at<GPT2Block>(i).forward(h, ctx);
  ModelOutput out;
  out.last_hidden_state = ln_f_->forward(h);
  return out;
}

StaticCache GPT2Model::new_static_cache(int64_t batch_size, int64_t max_cache_len) const {
  LOOM_CHECK(max_cache_len >= 1 && max_cache_len <= config_.n_positions,
             "[GPT2Model] max_cache_len ", max_cache_len, " must be in [1, n_positions ",
             config_.n_positions, "]");
  return StaticCache(config_.n_layer, batch_size, config_.n_head, max_cache_len,
                     config_.n_embd / config_.n_head, wte_->weight().dtype(),
                     wte_->weight().device());
}

std::string GPT2Model::config_json() const {
  GPT2Config c = config_;
  c.architectures = {architecture()};
  return c.to_json_string();
}

std::vector<std::string> GPT2Model::ignored_checkpoint_keys() const {
  // Causal-mask buffers of old checkpoints (transformers'
  // _keys_to_ignore_on_load_unexpected for GPT-2).
  return {"attn.bias", "attn.masked_bias", "crossattention.bias", "crossattention.masked_bias"};
}

void GPT2Model::init_weights(const std::function<bool(const std::string&)>& select) {
  std::unordered_set<const void*> done;
  models::init_standard_weights(*this, config_.initializer_range, select, done);
  // GPT-2's scaled init of the residual projections: std / sqrt(2 n_layer).
  double std = config_.initializer_range / std::sqrt(2.0 * static_cast<double>(config_.n_layer));
  for (auto& [name, p] : named_parameters()) {
    bool proj = name.size() >= 13 && name.compare(name.size() - 13, 13, "c_proj.weight") == 0;
    if (proj && select(name)) nn::init_normal_(p, 0.0, std);
  }
}

// ---- GPT2LMHeadModel ----

GPT2LMHeadModel::GPT2LMHeadModel(const GPT2Config& config) {
  {
    nn::NoInitGuard no_init;
    transformer_ = register_module("transformer", std::make_shared<GPT2Model>(config));
    lm_head_ = register_module(
        "lm_head", std::make_shared<nn::Linear>(config.n_embd, config.vocab_size, false));
    if (config.tie_word_embeddings) lm_head_->set_parameter("weight", transformer_->wte().weight());
  }
  if (!nn::NoInitGuard::active()) init_weights();
}

ModelOutput GPT2LMHeadModel::forward(const ModelInputs& in) {
  ModelOutput out = transformer_->forward(in);
  out.logits = lm_head_->forward(out.last_hidden_state);  // [B,T,V]
  if (in.labels.defined()) out.loss = causal_lm_loss(out.logits, in.labels);
  return out;
}

ModelOutput GPT2LMHeadModel::forward_with_cache(const Tensor& input_ids,
                                                const Tensor& cache_position, StaticCache& cache,
                                                int64_t logits_to_keep) {
  ModelOutput out = transformer_->forward_with_cache(input_ids, cache_position, cache);
  Tensor h = out.last_hidden_state;  // [B,S,C]
  int64_t s = h.size(1);
  LOOM_CHECK(logits_to_keep >= 0, "[GPT2LMHeadModel] logits_to_keep must be >= 0, got ",
             logits_to_keep);
  if (logits_to_keep > 0 && logits_to_keep < s) h = slice(h, 1, s - logits_to_keep, s);
  out.logits = lm_head_->forward(h);  // [B,S',V]
  return out;
}

std::string GPT2LMHeadModel::config_json() const {
  GPT2Config c = config();
  c.architectures = {architecture()};
  return c.to_json_string();
}

std::vector<std::string> GPT2LMHeadModel::ignored_checkpoint_keys() const {
  return transformer_->ignored_checkpoint_keys();
}

void GPT2LMHeadModel::init_weights(const std::function<bool(const std::string&)>& select) {
  transformer_->init_weights([&](const std::string& n) { return select("transformer." + n); });
  if (!config().tie_word_embeddings && select("lm_head.weight"))
    nn::init_normal_(lm_head_->weight(), 0.0, config().initializer_range);
}

}  // namespace loom
