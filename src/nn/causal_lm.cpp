// causal_lm_loss (loom/causal_lm.h): transformers' ForCausalLMLoss
// (transformers/loss/loss_utils.py), shared by every CausalLM.
#include "loom/causal_lm.h"

#include "loom/error.h"

namespace loom {

Tensor causal_lm_loss(const Tensor& logits, const Tensor& labels) {
  LOOM_CHECK(logits.defined() && logits.dim() == 3, "[causal_lm_loss] logits must be [B,T,V]");
  LOOM_CHECK(labels.defined() && labels.dim() == 2 && labels.size(0) == logits.size(0) &&
                 labels.size(1) == logits.size(1),
             "[causal_lm_loss] labels ", labels.defined() ? to_string(labels.shape()) : "undefined",
             " do not match logits ", to_string(logits.shape()));
  LOOM_CHECK(labels.dtype() == DType::i64 || labels.dtype() == DType::i32,
             "[causal_lm_loss] labels must be i64 or i32, got ", dtype_name(labels.dtype()));
  int64_t b = labels.size(0), t = labels.size(1);
  // transformers' ForCausalLMLoss: pad labels with -100 on the right, take [1:].
  Tensor shifted =
      concat({slice(labels, 1, 1, t), full({b, 1}, -100, labels.dtype(), labels.device())}, 1);
  return cross_entropy(logits, shifted, -100);
}

}  // namespace loom
