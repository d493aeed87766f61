// Op test table, attention in training: the attention op with dropout on its
// probabilities (the generator drawn inside the case after manual_seed, so
// every run of a case — finite differences included — sees the same keep
// decisions) and attention_backward, the kNondiff op its gradient rule emits
// (built with autograd::apply; cpu vs reference over the dtype sweep). Shapes
// cross the cpu kernels' 32-row blocks, mix causal / padding / float masks and
// grouped-query heads. (Table entries only; see op_cases.h.)
#include <limits>

#include "autograd/engine.h"
#include "ops/op_cases.h"

// Cases are designated initializers that leave later fields at their defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace loom::optest {
namespace {

using ops::OpKind;

enum class AttnMask { none, padding, floating };

struct AttnSpec {
  const char* name;
  int64_t batch, heads, kv_heads, t, s, d;
  bool causal;
  AttnMask mask;
  double p;
  bool grad;
};

const std::vector<AttnSpec>& attn_specs() {
  static const std::vector<AttnSpec> s = {
      {"dropout", 2, 1, 1, 3, 4, 3, false, AttnMask::none, 0.3, true},
      {"dropout_causal_padding", 2, 2, 2, 4, 4, 3, true, AttnMask::padding, 0.25, true},
      {"dropout_float_mask", 1, 2, 2, 3, 5, 2, false, AttnMask::floating, 0.4, true},
      {"dropout_gqa", 1, 4, 2, 3, 3, 2, true, AttnMask::none, 0.2, true},
      {"no_dropout_gqa_padding", 2, 2, 1, 3, 4, 2, false, AttnMask::padding, 0.0, true},
      {"blocks_40", 1, 2, 1, 40, 37, 5, true, AttnMask::padding, 0.1, false},
  };
  return s;
}

// q [B,H,T,D], k/v [B,Hkv,S,D], optional mask [B,1,1,S] (padding: the last
// key of item 1 masked; float: finite offsets and one -inf per item).
Inputs attn_operands(const AttnSpec& c, CaseEnv& e) {
  Inputs in = {e.data({c.batch, c.heads, c.t, c.d}), e.data({c.batch, c.kv_heads, c.s, c.d}),
               e.data({c.batch, c.kv_heads, c.s, c.d})};
  if (c.mask == AttnMask::padding) {
    std::vector<double> mv(c.batch * c.s, 1.0);
    if (c.batch > 1) mv[2 * c.s - 1] = 0.0;
    in.push_back(e.values(mv, {c.batch, 1, 1, c.s}, DType::boolean));
  } else if (c.mask == AttnMask::floating) {
    std::vector<double> mv(c.batch * c.s);
    for (size_t i = 0; i < mv.size(); ++i)
      mv[i] = i % 4 == 2 ? -std::numeric_limits<double>::infinity() : 0.3 * double(i % 3) - 0.3;
    in.push_back(e.values(mv, {c.batch, 1, 1, c.s}));
  }
  return in;
}

ops::Attrs attn_attrs(const AttnSpec& c) {
  ops::Attrs a;
  a.causal = c.causal;
  a.dropout_p = c.p;
  return a;
}

}  // namespace

void add_attention_training_cases(std::vector<OpCase>& t) {
  for (const AttnSpec& c : attn_specs()) {
    t.push_back({.op = OpKind::k_attention,
                 .name = c.name,
                 .dtypes = kFloats,
                 .make = [c](CaseEnv& e) { return attn_operands(c, e); },
                 .run =
                     [c](const Inputs& in, const CaseEnv&) {
                       manual_seed(2024);
                       Tensor mask = in.size() == 4 ? in[3] : Tensor();
                       return scaled_dot_product_attention(in[0], in[1], in[2], mask, c.causal, 0.0,
                                                           c.p);
                     },
                 .reduce_len = std::max(c.s, c.d),
                 .grad = c.grad});
    ops::Attrs a = attn_attrs(c);
    t.push_back({.op = OpKind::k_attention_backward,
                 .name = c.name,
                 .dtypes = kFloats,
                 .make =
                     [c](CaseEnv& e) {
                       Inputs in = attn_operands(c, e);
                       in.insert(in.begin() + 3, e.data({c.batch, c.heads, c.t, c.d}));
                       if (c.p > 0) in.push_back(e.values({2024, 3}, {2}, DType::i64));
                       return in;
                     },
                 .run =
                     [a](const Inputs& in, const CaseEnv&) {
                       return autograd::apply(OpKind::k_attention_backward, in, a);
                     },
                 .reduce_len = c.s * c.heads,
                 .grad = false,
                 .attrs = a});
  }
}

}  // namespace loom::optest
