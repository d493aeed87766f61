// Shared model helpers (models/init_weights.h).
#include "nn/models/init_weights.h"

#include "loom/error.h"

namespace loom::models {

namespace {
std::string join_name(const std::string& prefix, const char* leaf) {
  return prefix.empty() ? leaf : prefix + "." + leaf;
}
}  // namespace

void init_standard_weights(nn::Module& root, double std, const Select& select,
                           std::unordered_set<const void*>& done) {
  auto pick = [&](const std::string& prefix, const char* leaf, const Tensor& t) {
    return t.defined() && select(join_name(prefix, leaf)) && done.insert(t.impl()).second;
  };
  for (auto& [prefix, m] : root.named_modules()) {
    if (auto* lin = dynamic_cast<nn::Linear*>(m)) {
      if (pick(prefix, "weight", lin->weight())) nn::init_normal_(lin->weight(), 0.0, std);
      if (pick(prefix, "bias", lin->bias())) nn::init_constant_(lin->bias(), 0.0);
    } else if (auto* conv = dynamic_cast<nn::Conv1D*>(m)) {
      if (pick(prefix, "weight", conv->weight())) nn::init_normal_(conv->weight(), 0.0, std);
      if (pick(prefix, "bias", conv->bias())) nn::init_constant_(conv->bias(), 0.0);
    } else if (auto* emb = dynamic_cast<nn::Embedding*>(m)) {
      if (pick(prefix, "weight", emb->weight())) {
        nn::init_normal_(emb->weight(), 0.0, std);
        emb->zero_padding_row();
      }
    } else if (auto* ln = dynamic_cast<nn::LayerNorm*>(m)) {
      if (pick(prefix, "weight", ln->weight())) nn::init_constant_(ln->weight(), 1.0);
      if (pick(prefix, "bias", ln->bias())) nn::init_constant_(ln->bias(), 0.0);
    }
  }
}

Tensor key_padding_mask(const Tensor& mask, int64_t batch, int64_t seq, const char* model) {
  if (!mask.defined()) return Tensor();
  LOOM_CHECK(mask.dim() == 2 && mask.size(0) == batch && mask.size(1) == seq, "[", model,
             "] attention_mask ", to_string(mask.shape()), " must be [B, T] = [", batch, ", ", seq,
             "]");
  return reshape(ne(mask, 0.0), {batch, 1, 1, seq});
}

Tensor packed_sequence_mask(const Tensor& position_ids, int64_t seq) {
  if (!position_ids.defined()) return Tensor();
  const Tensor pos = cast(position_ids, DType::i64);
  const Tensor i = reshape(arange(seq, DType::i64, pos.device()), {1, seq, 1});
  const Tensor j = reshape(arange(seq, DType::i64, pos.device()), {1, 1, seq});
  const Tensor start = i - reshape(pos, {pos.size(0), seq, 1});  // [B,T,1]
  return reshape(ge(j, start), {pos.size(0), 1, seq, seq});
}

void check_input_ids(const Tensor& ids, const char* model) {
  LOOM_CHECK(ids.defined(), "[", model, "] input_ids are required");
  LOOM_CHECK(ids.dim() == 2, "[", model, "] input_ids must be [B, T], got ",
             to_string(ids.shape()));
  LOOM_CHECK(ids.dtype() == DType::i64 || ids.dtype() == DType::i32, "[", model,
             "] input_ids must be i64 or i32, got ", dtype_name(ids.dtype()));
  LOOM_CHECK(ids.size(0) >= 1 && ids.size(1) >= 1, "[", model, "] input_ids ",
             to_string(ids.shape()), " is empty");
}

void check_ids_like(const Tensor& t, const Tensor& ids, const char* name, const char* model,
                    bool allow_batch_one) {
  if (!t.defined()) return;
  bool batch_ok = t.dim() == 2 && (t.size(0) == ids.size(0) || (allow_batch_one && t.size(0) == 1));
  LOOM_CHECK(batch_ok && t.size(1) == ids.size(1), "[", model, "] ", name, " ",
             to_string(t.shape()), " does not match input_ids ", to_string(ids.shape()));
  LOOM_CHECK(t.dtype() == DType::i64 || t.dtype() == DType::i32, "[", model, "] ", name,
             " must be i64 or i32, got ", dtype_name(t.dtype()));
}

bool matches_any(const std::string& key, const std::vector<std::string>& patterns) {
  std::string k = "." + key + ".";
  for (const std::string& p : patterns)
    if (k.find("." + p + ".") != std::string::npos) return true;
  return false;
}

}  // namespace loom::models
