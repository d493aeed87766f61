// BertModel (loom/bert.h), following transformers' modeling_bert.py module
// by module so names and arithmetic order match: BertEmbeddings ((word +
// token_type) + position -> LayerNorm -> dropout), BertSelfAttention,
// BertSelfOutput / BertOutput (LayerNorm(dropout(dense(x)) + input)),
// BertIntermediate, BertLayer, BertEncoder and the tanh pooler.
#include "loom/bert.h"

#include "loom/error.h"
#include "nn/models/bert/bert_parts.h"
#include "nn/models/init_weights.h"

namespace loom {

namespace {

using nn::Dropout;
using nn::LayerNorm;
using nn::Linear;

// LayerNorm(dropout(dense(x)) + input): BertSelfOutput and BertOutput.
class BertResidualOutput : public nn::Module {
 public:
  BertResidualOutput(const BertConfig& c, int64_t in) {
    dense_ = register_module("dense", std::make_shared<Linear>(in, c.hidden_size));
    ln_ =
        register_module("LayerNorm", std::make_shared<LayerNorm>(c.hidden_size, c.layer_norm_eps));
    dropout_ = register_module("dropout", std::make_shared<Dropout>(c.hidden_dropout_prob));
  }
  std::string type_name() const override { return "BertOutput"; }
  Tensor forward(const Tensor& x, const Tensor& input) const {
    return ln_->forward(dropout_->forward(dense_->forward(x)) + input);
  }

 private:
  std::shared_ptr<Linear> dense_;
  std::shared_ptr<LayerNorm> ln_;
  std::shared_ptr<Dropout> dropout_;
};

class BertSelfAttention : public nn::Module {
 public:
  explicit BertSelfAttention(const BertConfig& c)
      : heads_(c.num_attention_heads),
        pdrop_(c.attention_probs_dropout_prob),
        causal_(c.is_decoder) {
    query_ = register_module("query", std::make_shared<Linear>(c.hidden_size, c.hidden_size));
    key_ = register_module("key", std::make_shared<Linear>(c.hidden_size, c.hidden_size));
    value_ = register_module("value", std::make_shared<Linear>(c.hidden_size, c.hidden_size));
    dropout_ = register_module("dropout", std::make_shared<Dropout>(pdrop_));
  }
  std::string type_name() const override { return "BertSelfAttention"; }
  Tensor forward(const Tensor& x, const Tensor& key_mask) const {
    nn::AttentionOptions o;
    o.mask = key_mask;
    o.causal = causal_;
    o.dropout_p = pdrop_;
    o.training = is_training();
    return nn::multi_head_attention(query_->forward(x), key_->forward(x), value_->forward(x),
                                    heads_, o);
  }

 private:
  int64_t heads_;
  double pdrop_;
  bool causal_;
  std::shared_ptr<Linear> query_, key_, value_;
  std::shared_ptr<Dropout> dropout_;
};

class BertAttention : public nn::Module {
 public:
  explicit BertAttention(const BertConfig& c) {
    self_ = register_module("self", std::make_shared<BertSelfAttention>(c));
    output_ = register_module("output", std::make_shared<BertResidualOutput>(c, c.hidden_size));
  }
  std::string type_name() const override { return "BertAttention"; }
  Tensor forward(const Tensor& x, const Tensor& key_mask) const {
    return output_->forward(self_->forward(x, key_mask), x);
  }

 private:
  std::shared_ptr<BertSelfAttention> self_;
  std::shared_ptr<BertResidualOutput> output_;
};

class BertIntermediate : public nn::Module {
 public:
  explicit BertIntermediate(const BertConfig& c) : act_(c.hidden_act) {
    dense_ = register_module("dense", std::make_shared<Linear>(c.hidden_size, c.intermediate_size));
  }
  std::string type_name() const override { return "BertIntermediate"; }
  Tensor forward(const Tensor& x) const { return nn::activation(act_, dense_->forward(x)); }

 private:
  std::string act_;
  std::shared_ptr<Linear> dense_;
};

class BertLayer : public nn::Module {
 public:
  explicit BertLayer(const BertConfig& c) {
    attention_ = register_module("attention", std::make_shared<BertAttention>(c));
    intermediate_ = register_module("intermediate", std::make_shared<BertIntermediate>(c));
    output_ =
        register_module("output", std::make_shared<BertResidualOutput>(c, c.intermediate_size));
  }
  std::string type_name() const override { return "BertLayer"; }
  Tensor forward(const Tensor& x, const Tensor& key_mask) const {
    Tensor a = attention_->forward(x, key_mask);
    return output_->forward(intermediate_->forward(a), a);
  }

 private:
  std::shared_ptr<BertAttention> attention_;
  std::shared_ptr<BertIntermediate> intermediate_;
  std::shared_ptr<BertResidualOutput> output_;
};

}  // namespace

// ---- BertEmbeddings ----

BertEmbeddings::BertEmbeddings(const BertConfig& c) {
  word_ = register_module("word_embeddings", std::make_shared<nn::Embedding>(
                                                 c.vocab_size, c.hidden_size, c.pad_token_id));
  position_ = register_module("position_embeddings", std::make_shared<nn::Embedding>(
                                                         c.max_position_embeddings, c.hidden_size));
  token_type_ = register_module("token_type_embeddings",
                                std::make_shared<nn::Embedding>(c.type_vocab_size, c.hidden_size));
  ln_ = register_module("LayerNorm", std::make_shared<LayerNorm>(c.hidden_size, c.layer_norm_eps));
  dropout_ = register_module("dropout", std::make_shared<Dropout>(c.hidden_dropout_prob));
}

Tensor BertEmbeddings::forward(const Tensor& ids, const Tensor& token_type_ids,
                               const Tensor& position_ids) const {
  int64_t b = ids.size(0), t = ids.size(1);
  Tensor types =
      token_type_ids.defined() ? token_type_ids : zeros({b, t}, DType::i64, ids.device());
  Tensor pos =
      position_ids.defined() ? position_ids : reshape(arange(t, DType::i64, ids.device()), {1, t});
  Tensor e = word_->forward(ids) + token_type_->forward(types);
  e = e + position_->forward(pos);
  return dropout_->forward(ln_->forward(e));
}

// ---- BertModel ----

BertModel::BertModel(const BertConfig& config, bool add_pooling_layer) : config_(config) {
  config_.validate();
  check_config_fits("[BertModel]", config_);
  {
    nn::NoInitGuard no_init;
    const BertConfig& c = config_;
    embeddings_ = register_module("embeddings", std::make_shared<BertEmbeddings>(c));
    encoder_ = register_module("encoder", std::make_shared<BertContainer>("BertEncoder"));
    layers_ = encoder_->register_module("layer", std::make_shared<nn::ModuleList>());
    for (int64_t i = 0; i < c.num_hidden_layers; ++i)
      layers_->push_back(std::make_shared<BertLayer>(c));
    if (add_pooling_layer) {
      auto pooler = register_module("pooler", std::make_shared<BertContainer>("BertPooler"));
      pooler_dense_ =
          pooler->register_module("dense", std::make_shared<Linear>(c.hidden_size, c.hidden_size));
    }
  }
  if (!nn::NoInitGuard::active()) init_weights();
}

nn::Embedding& BertModel::word_embeddings() const { return embeddings_->word_embeddings(); }

ModelOutput BertModel::forward(const ModelInputs& in) {
  const char* name = "BertModel";
  models::check_input_ids(in.input_ids, name);
  models::check_ids_like(in.token_type_ids, in.input_ids, "token_type_ids", name, false);
  models::check_ids_like(in.position_ids, in.input_ids, "position_ids", name, true);
  int64_t b = in.input_ids.size(0), t = in.input_ids.size(1);
  LOOM_CHECK(t <= config_.max_position_embeddings || in.position_ids.defined(),
             "[BertModel] sequence length ", t, " exceeds max_position_embeddings ",
             config_.max_position_embeddings);
  Tensor h = embeddings_->forward(in.input_ids, in.token_type_ids, in.position_ids);
  Tensor key_mask = models::key_padding_mask(in.attention_mask, b, t, name);
  for (size_t i = 0; i < layers_->size(); ++i) {
    lazy::RematScope remat(checkpoint_layers());  // gradient checkpointing: one call per layer
    h = layers_->at<BertLayer>(i).forward(h, key_mask);
  }
  ModelOutput out;
  out.last_hidden_state = h;
  if (pooler_dense_) {
    Tensor first = reshape(slice(h, 1, 0, 1), {b, config_.hidden_size});  // h[:, 0]
    out.pooler_output = tanh(pooler_dense_->forward(first));
  }
  return out;
}

std::string BertModel::config_json() const {
  BertConfig c = config_;
  c.architectures = {architecture()};
  return c.to_json_string();
}

std::vector<std::string> BertModel::ignored_checkpoint_keys() const {
  return {"embeddings.position_ids"};  // a persistent buffer in old checkpoints
}

void BertModel::init_weights(const std::function<bool(const std::string&)>& select) {
  std::unordered_set<const void*> done;
  models::init_standard_weights(*this, config_.initializer_range, select, done);
}

}  // namespace loom
