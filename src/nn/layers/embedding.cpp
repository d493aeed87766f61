// Embedding (torch.nn.Embedding): a lookup through loom::embedding. With a
// padding_idx, positions holding it take the row's value with no gradient,
// so the row is never trained — torch's rule (its backward skips padding_idx).
#include "loom/error.h"
#include "loom/nn.h"

namespace loom::nn {

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim,
                     std::optional<int64_t> padding_idx)
    : num_(num_embeddings), dim_(embedding_dim), padding_idx_(padding_idx) {
  LOOM_CHECK(num_ >= 1 && dim_ >= 1, "[Embedding] sizes must be >= 1, got ", num_, " x ", dim_);
  if (padding_idx_) {
    if (*padding_idx_ < 0) *padding_idx_ += num_;  // torch accepts negative indices
    LOOM_CHECK(*padding_idx_ >= 0 && *padding_idx_ < num_, "[Embedding] padding_idx ", *padding_idx,
               " is outside [", -num_, ", ", num_, ")");
  }
  weight_ = register_parameter("weight", zeros({num_, dim_}));
  if (!NoInitGuard::active()) {
    init_normal_(weight(), 0.0, 1.0);
    zero_padding_row();
  }
}

void Embedding::zero_padding_row() const {
  if (!padding_idx_) return;
  NoGradGuard no_grad;
  Tensor w = weight();
  Tensor row_is_pad = reshape(
      eq(arange(num_, DType::i64, w.device()), static_cast<double>(*padding_idx_)), {num_, 1});
  w.copy_(where(row_is_pad, zeros({1, dim_}, w.dtype(), w.device()), w));
}

Tensor Embedding::forward(const Tensor& ids) const {
  LOOM_CHECK(ids.defined(), "[Embedding] ids are undefined");
  Tensor out = embedding(weight(), ids);
  if (padding_idx_ && is_grad_enabled() && weight().requires_grad()) {
    int64_t p = *padding_idx_;
    Tensor pad_row;
    {
      NoGradGuard no_grad;
      pad_row = slice(weight(), 0, p, p + 1);  // [1, dim], outside the graph
    }
    out = where(unsqueeze(eq(ids, static_cast<double>(p)), -1), pad_row, out);
  }
  return out;
}

}  // namespace loom::nn
