// BERT heads (loom/bert.h): BertForMaskedLM ("cls.predictions", decoder tied
// to the word embeddings plus its own bias) and BertForSequenceClassification
// (dropout + classifier on the pooled output, loss by problem_type as
// transformers' BertForSequenceClassification.forward).
#include "loom/autocast.h"
#include "loom/error.h"
#include "nn/models/bert/bert_parts.h"
#include "nn/models/init_weights.h"

namespace loom {

namespace {

bool is_integer(DType d) { return d == DType::i64 || d == DType::i32; }

}  // namespace

// ---- BertLMPredictionHead ----

BertLMPredictionHead::BertLMPredictionHead(const BertConfig& c, const Tensor& word_embeddings)
    : act_(c.hidden_act) {
  bias_ = register_parameter("bias", zeros({c.vocab_size}));
  auto transform =
      register_module("transform", std::make_shared<BertContainer>("BertPredictionHeadTransform"));
  dense_ = transform->register_module("dense",
                                      std::make_shared<nn::Linear>(c.hidden_size, c.hidden_size));
  ln_ = transform->register_module(
      "LayerNorm", std::make_shared<nn::LayerNorm>(c.hidden_size, c.layer_norm_eps));
  decoder_ = register_module("decoder", std::make_shared<nn::Linear>(c.hidden_size, c.vocab_size));
  if (c.tie_word_embeddings) decoder_->set_parameter("weight", word_embeddings);
  decoder_->set_parameter("bias", bias());
}

Tensor BertLMPredictionHead::forward(const Tensor& hidden) const {
  Tensor x = ln_->forward(nn::activation(act_, dense_->forward(hidden)));
  return decoder_->forward(x);
}

// ---- BertForMaskedLM ----

BertForMaskedLM::BertForMaskedLM(const BertConfig& config) {
  {
    nn::NoInitGuard no_init;
    bert_ =
        register_module("bert", std::make_shared<BertModel>(config, /*add_pooling_layer=*/false));
    auto cls = register_module("cls", std::make_shared<BertContainer>("BertOnlyMLMHead"));
    predictions_ = cls->register_module(
        "predictions",
        std::make_shared<BertLMPredictionHead>(config, bert_->word_embeddings().weight()));
  }
  if (!nn::NoInitGuard::active()) init_weights();
}

ModelOutput BertForMaskedLM::forward(const ModelInputs& in) {
  ModelOutput out = bert_->forward(in);
  out.logits = predictions_->forward(out.last_hidden_state);  // [B,T,V]
  if (in.labels.defined()) {
    LOOM_CHECK(in.labels.shape() == in.input_ids.shape() && is_integer(in.labels.dtype()),
               "[BertForMaskedLM] labels must be integer [B,T] like input_ids ",
               to_string(in.input_ids.shape()), ", got ", to_string(in.labels.shape()), " ",
               dtype_name(in.labels.dtype()));
    out.loss = cross_entropy(out.logits, in.labels, -100);
  }
  return out;
}

std::string BertForMaskedLM::config_json() const {
  BertConfig c = config();
  c.architectures = {architecture()};
  return c.to_json_string();
}

std::vector<std::string> BertForMaskedLM::ignored_checkpoint_keys() const {
  // transformers: _keys_to_ignore_on_load_unexpected = [r"pooler"] for the MLM model.
  std::vector<std::string> keys = bert_->ignored_checkpoint_keys();
  keys.push_back("pooler");
  return keys;
}

void BertForMaskedLM::init_weights(const std::function<bool(const std::string&)>& select) {
  std::unordered_set<const void*> done;
  models::init_standard_weights(*this, config().initializer_range, select, done);
  if (select("cls.predictions.bias")) nn::init_constant_(predictions_->bias(), 0.0);
}

// ---- BertForSequenceClassification ----

BertForSequenceClassification::BertForSequenceClassification(const BertConfig& config) {
  {
    nn::NoInitGuard no_init;
    bert_ = register_module("bert", std::make_shared<BertModel>(config));
    double p = config.classifier_dropout.value_or(config.hidden_dropout_prob);
    dropout_ = register_module("dropout", std::make_shared<nn::Dropout>(p));
    classifier_ = register_module(
        "classifier", std::make_shared<nn::Linear>(config.hidden_size, config.num_labels()));
  }
  if (!nn::NoInitGuard::active()) init_weights();
}

ModelOutput BertForSequenceClassification::forward(const ModelInputs& in) {
  const char* name = "BertForSequenceClassification";
  ModelOutput out = bert_->forward(in);
  out.logits = classifier_->forward(dropout_->forward(out.pooler_output));  // [B,L]
  if (!in.labels.defined()) return out;
  const Tensor& y = in.labels;
  int64_t b = out.logits.size(0), n = config().num_labels();
  std::string type = config().problem_type;
  if (type.empty())
    type = n == 1                  ? "regression"
           : is_integer(y.dtype()) ? "single_label_classification"
                                   : "multi_label_classification";
  if (type == "single_label_classification") {
    LOOM_CHECK(is_integer(y.dtype()) && y.numel() == b, "[", name,
               "] single-label labels must be [B] integer class ids, got ", to_string(y.shape()),
               " ", dtype_name(y.dtype()));
    out.loss = cross_entropy(reshape(out.logits, {-1, n}), reshape(y, {-1}), -100);
    return out;
  }
  // mse_loss and binary_cross_entropy_with_logits are in torch.autocast's fp32
  // list: bf16 logits (autocast) are cast to f32 for the loss.
  Tensor logits = is_autocast_enabled() && is_low_precision_float(out.logits.dtype())
                      ? cast(out.logits, DType::f32)
                      : out.logits;
  if (type == "regression") {
    Tensor target = cast(y, logits.dtype());
    LOOM_CHECK(target.numel() == logits.numel(), "[", name, "] regression labels ",
               to_string(y.shape()), " do not match logits ", to_string(logits.shape()));
    Tensor diff = reshape(logits, {-1}) - reshape(target, {-1});  // MSELoss (squeezed)
    out.loss = mean(diff * diff);
  } else {
    Tensor target = cast(y, logits.dtype());
    LOOM_CHECK(target.shape() == logits.shape(), "[", name, "] multi-label labels ",
               to_string(y.shape()), " must be [B, num_labels] = ", to_string(logits.shape()));
    // BCEWithLogitsLoss, stable form: max(x, 0) - x y + log(1 + exp(-|x|)).
    const Tensor& x = logits;
    out.loss = mean(maximum(x, 0.0) - x * target + log(exp(neg(abs(x))) + 1.0));
  }
  return out;
}

std::string BertForSequenceClassification::config_json() const {
  BertConfig c = config();
  c.architectures = {architecture()};
  return c.to_json_string();
}

std::vector<std::string> BertForSequenceClassification::ignored_checkpoint_keys() const {
  return bert_->ignored_checkpoint_keys();
}

void BertForSequenceClassification::init_weights(
    const std::function<bool(const std::string&)>& select) {
  std::unordered_set<const void*> done;
  models::init_standard_weights(*this, config().initializer_range, select, done);
}

}  // namespace loom
