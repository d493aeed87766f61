// Multi-head attention on loom::scaled_dot_product_attention, and
// torch.nn.MultiheadAttention's parameter layout. Dropout on the attention
// probabilities (training, p > 0) runs inside the attention op with one
// generator draw, the keep decisions of dropout(softmax(q k^T * scale +
// mask), p) as transformers' eager_attention_forward applies it; its backward
// (attention_backward) recomputes the probabilities instead of storing them.
// A query row whose keys are all masked gives zeros (the op's contract;
// an additive lowest-float mask would give the mean of v there).
#include <cmath>

#include "loom/autocast.h"
#include "loom/error.h"
#include "loom/nn.h"

namespace loom::nn {

namespace {

// [B, L, H*D] -> [B, H, L, D]
Tensor split_heads(const Tensor& x, int64_t heads) {
  int64_t b = x.size(0), l = x.size(1), c = x.size(2);
  return transpose(reshape(x, {b, l, heads, c / heads}), 1, 2);
}

}  // namespace

Tensor multi_head_attention(const Tensor& q, const Tensor& k, const Tensor& v, int64_t num_heads,
                            const AttentionOptions& o) {
  LOOM_CHECK(q.defined() && k.defined() && v.defined(), "[attention] q, k or v is undefined");
  LOOM_CHECK(q.dim() == 3 && k.dim() == 3 && v.dim() == 3,
             "[attention] q, k, v must be [B,T,C], "
             "got ",
             to_string(q.shape()), ", ", to_string(k.shape()), ", ", to_string(v.shape()));
  int64_t b = q.size(0), t = q.size(1), c = q.size(2);
  LOOM_CHECK(num_heads >= 1 && c % num_heads == 0, "[attention] ", c,
             " channels are not divisible into ", num_heads, " heads");
  LOOM_CHECK(k.size(0) == b && v.size(0) == b && k.size(2) == c && v.size(2) == c &&
                 k.size(1) == v.size(1),
             "[attention] shapes q ", to_string(q.shape()), ", k ", to_string(k.shape()), ", v ",
             to_string(v.shape()), " do not match");
  Tensor qh = split_heads(q, num_heads), kh = split_heads(k, num_heads),
         vh = split_heads(v, num_heads);
  double p = o.training ? o.dropout_p : 0.0;
  Tensor out = scaled_dot_product_attention(qh, kh, vh, o.mask, o.causal, o.scale, p);
  return reshape(transpose(out, 1, 2), {b, t, c});  // [B,H,T,D] -> [B,T,C]
}

MultiheadAttention::MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout)
    : embed_dim_(embed_dim), num_heads_(num_heads), dropout_(dropout) {
  LOOM_CHECK(embed_dim_ >= 1 && num_heads_ >= 1 && embed_dim_ % num_heads_ == 0,
             "[MultiheadAttention] embed_dim ", embed_dim_, " is not divisible by num_heads ",
             num_heads_);
  LOOM_CHECK(dropout_ >= 0 && dropout_ < 1, "[MultiheadAttention] dropout must be in [0, 1), got ",
             dropout_);
  in_w_ = register_parameter("in_proj_weight", zeros({3 * embed_dim_, embed_dim_}));
  in_b_ = register_parameter("in_proj_bias", zeros({3 * embed_dim_}));
  out_proj_ = register_module("out_proj", std::make_shared<Linear>(embed_dim_, embed_dim_));
  if (!NoInitGuard::active()) {
    // torch: xavier_uniform_ on [3C, C]: bound sqrt(6 / (fan_in + fan_out)).
    double bound = std::sqrt(6.0 / static_cast<double>(4 * embed_dim_));
    init_uniform_(param(in_w_), -bound, bound);
    init_constant_(out_proj_->bias(), 0.0);
  }
}

Tensor MultiheadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                   const Tensor& key_padding_mask, bool causal) const {
  int64_t c = embed_dim_;
  for (const Tensor* x : {&query, &key, &value})
    LOOM_CHECK(x->defined() && x->dim() == 3 && x->size(2) == c,
               "[MultiheadAttention] inputs "
               "must be [B, L, ",
               c, "], got ", x->defined() ? to_string(x->shape()) : "undefined");
  std::vector<Tensor> w = split(param(in_w_), c, 0), bias = split(param(in_b_), c, 0);
  // torch's in-projection is a linear: under autocast its bias is cast with
  // the operands and q, k, v are bf16 (as nn::Linear, loom/autocast.h).
  auto in_proj = [](const Tensor& x, const Tensor& weight, const Tensor& b) {
    Tensor y = matmul(x, weight, false, true);
    return y + (is_autocast_enabled() && y.dtype() != b.dtype() ? cast(b, y.dtype()) : b);
  };
  Tensor q = in_proj(query, w[0], bias[0]);
  Tensor k = in_proj(key, w[1], bias[1]);
  Tensor v = in_proj(value, w[2], bias[2]);
  AttentionOptions o;
  o.causal = causal;
  o.dropout_p = dropout_;
  o.training = is_training();
  if (key_padding_mask.defined()) {
    LOOM_CHECK(key_padding_mask.dim() == 2 && key_padding_mask.size(0) == key.size(0) &&
                   key_padding_mask.size(1) == key.size(1),
               "[MultiheadAttention] key_padding_mask ", to_string(key_padding_mask.shape()),
               " must be [B, S] = [", key.size(0), ", ", key.size(1), "]");
    // torch: true = ignore; loom's attention mask: true = attend.
    o.mask = reshape(eq(key_padding_mask, 0.0), {key.size(0), 1, 1, key.size(1)});
  }
  return out_proj_->forward(multi_head_attention(q, k, v, num_heads_, o));
}

}  // namespace loom::nn
