// Op test table, neural-network ops: softmax, log_softmax, layer_norm,
// dropout (seeded inside the case), cross_entropy (ignore_index, label
// smoothing) and scaled-dot-product attention (causal, bool and float
// masks, T != S, Dv != D, a fully masked row). (Table entries only; see
// op_cases.h.)
#include <limits>

#include "ops/op_cases.h"

// Cases are designated initializers that leave later fields at their defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace loom::optest {
namespace {

using ops::OpKind;

void add_softmax_cases(std::vector<OpCase>& t) {
  struct Spec {
    const char* name;
    Shape shape;
    int64_t axis;
    double scale;
    bool grad;
  };
  const std::vector<Spec> specs = {
      {"last_axis", {3, 7}, -1, 2.0, true},
      {"axis0", {5, 3}, 0, 2.0, true},
      {"middle", {2, 3, 4}, 1, 2.0, true},
      {"size1_axis", {4, 1}, 1, 2.0, true},
      {"rank0", {}, 0, 2.0, true},
      {"large_values", {2, 5}, -1, 500.0, false},
      {"empty_rows", {0, 6}, -1, 2.0, false},
      {"long_row_67", {2, 67}, 1, 4.0, false},
  };
  for (OpKind op : {OpKind::k_softmax, OpKind::k_log_softmax}) {
    for (const Spec& s : specs) {
      Shape shape = s.shape;
      double scale = s.scale;
      int64_t axis = s.axis;
      int64_t len = shape.empty() ? 1 : shape[axis < 0 ? axis + shape.size() : axis];
      t.push_back(
          {.op = op,
           .name = s.name,
           .dtypes = kFloats,
           .make = [shape, scale](CaseEnv& e) -> Inputs { return {e.data(shape, -scale, scale)}; },
           .run =
               [op, axis](const Inputs& in, const CaseEnv&) {
                 return op == OpKind::k_softmax ? softmax(in[0], axis) : log_softmax(in[0], axis);
               },
           .reduce_len = std::max<int64_t>(len, 1),
           .grad = s.grad});
    }
  }
}

void add_layer_norm_cases(std::vector<OpCase>& t) {
  struct Spec {
    const char* name;
    Shape shape;
    double eps;
    bool grad;
  };
  for (const Spec& s : std::vector<Spec>{{"rows_17", {3, 17}, 1e-5, true},
                                         {"rank3", {2, 3, 8}, 1e-5, true},
                                         {"rank1", {5}, 1e-5, true},
                                         {"one_channel", {4, 1}, 1e-5, true},
                                         {"big_eps", {2, 6}, 0.1, true},
                                         {"empty_rows", {0, 4}, 1e-5, false},
                                         {"wide_67", {2, 67}, 1e-5, false}}) {
    Shape shape = s.shape;
    double eps = s.eps;
    int64_t c = shape.back();
    t.push_back({.op = OpKind::k_layer_norm,
                 .name = s.name,
                 .dtypes = kFloats,
                 .make = [shape, c](CaseEnv& e) -> Inputs {
                   return {e.data(shape), e.data({c}, 0.5, 1.5), e.data({c}, -0.5, 0.5)};
                 },
                 .run = [eps](const Inputs& in,
                              const CaseEnv&) { return layer_norm(in[0], in[1], in[2], eps); },
                 .reduce_len = c,
                 .grad = s.grad});
  }
}

void add_dropout_cases(std::vector<OpCase>& t) {
  struct Spec {
    const char* name;
    Shape shape;
    double p;
    bool grad;
  };
  for (const Spec& s : std::vector<Spec>{{"half", {4, 37}, 0.5, false},
                                         {"small_p", {3, 1, 9}, 0.1, true},
                                         {"large_p", {50}, 0.9, true},
                                         {"rank0", {}, 0.3, true},
                                         {"empty", {0, 3}, 0.5, false}}) {
    Shape shape = s.shape;
    double p = s.p;
    t.push_back({.op = OpKind::k_dropout,
                 .name = s.name,
                 .dtypes = kFloats,
                 .make = [shape](CaseEnv& e) -> Inputs { return {e.data(shape)}; },
                 .run =
                     [p](const Inputs& in, const CaseEnv&) {
                       manual_seed(2024);
                       return dropout(in[0], p);
                     },
                 .grad = s.grad});
  }
}

void add_cross_entropy_cases(std::vector<OpCase>& t) {
  struct Spec {
    const char* name;
    Shape logits;
    std::vector<double> target;
    Shape target_shape;
    int64_t ignore_index;
    double smoothing;
    DType target_dtype;
  };
  for (const Spec& s : std::vector<Spec>{
           {"basic", {4, 7}, {3, 0, 6, 2}, {4}, -100, 0.0, DType::i64},
           {"ignore_index", {5, 3}, {2, -100, 0, -100, 1}, {5}, -100, 0.0, DType::i64},
           {"label_smoothing", {4, 6}, {5, -100, 0, 3}, {4}, -100, 0.1, DType::i64},
           {"rank3_i32", {2, 3, 5}, {4, 0, 1, 1, 3, 2}, {2, 3}, -100, 0.0, DType::i32},
           {"custom_ignore", {4, 3}, {2, 1, 2, 0}, {4}, 2, 0.2, DType::i64},
           {"unbatched", {6}, {4}, {}, -100, 0.0, DType::i64},
           {"one_class", {3, 1}, {0, 0, 0}, {3}, -100, 0.3, DType::i64},
           {"all_ignored", {2, 4}, {-100, -100}, {2}, -100, 0.0, DType::i64}}) {
    Spec c = s;
    int64_t n = numel(c.logits);
    t.push_back(
        {.op = OpKind::k_cross_entropy,
         .name = s.name,
         .dtypes = kFloats,
         .make = [c](CaseEnv& e) -> Inputs {
           return {e.data(c.logits, -3, 3), e.values(c.target, c.target_shape, c.target_dtype)};
         },
         .run =
             [c](const Inputs& in, const CaseEnv&) {
               return cross_entropy(in[0], in[1], c.ignore_index, c.smoothing);
             },
         .reduce_len = n,
         .grad = std::string(s.name) != "all_ignored",
         // No target counted: 0 / 0, NaN as torch's mean reduction.
         .nan_expected = std::string(s.name) == "all_ignored"});
  }
}

void add_attention_cases(std::vector<OpCase>& t) {
  enum class Mask { none, boolean, floating, masked_row };
  struct Spec {
    const char* name;
    Shape batch;
    int64_t t, s, d, dv;
    bool causal;
    Mask mask;
    Shape mask_shape;  // broadcasts to batch + [T, S]
    double scale;
    bool grad;
  };
  const double kNegInf = -std::numeric_limits<double>::infinity();
  for (const Spec& s : std::vector<Spec>{
           {"basic", {2}, 3, 3, 4, 4, false, Mask::none, {}, 0.0, true},
           {"causal_rank4", {1, 2}, 4, 4, 3, 3, true, Mask::none, {}, 0.0, true},
           {"bool_mask_broadcast", {2}, 3, 5, 4, 4, false, Mask::boolean, {3, 5}, 0.0, true},
           {"float_mask", {2}, 3, 5, 4, 2, false, Mask::floating, {2, 1, 5}, 0.0, true},
           {"cross_lengths_dv", {1}, 2, 5, 4, 3, false, Mask::none, {}, 0.0, true},
           {"explicit_scale", {2}, 3, 4, 5, 5, false, Mask::none, {}, 0.3, true},
           {"causal_t_gt_s", {1}, 4, 2, 3, 3, true, Mask::none, {}, 0.0, true},
           {"masked_row", {2}, 3, 4, 3, 3, false, Mask::masked_row, {3, 4}, 0.0, true},
           {"causal_and_mask", {2}, 4, 4, 3, 3, true, Mask::boolean, {2, 1, 4}, 0.0, true},
           {"odd_17", {1}, 17, 9, 5, 5, true, Mask::none, {}, 0.0, false},
           {"empty_t", {2}, 0, 3, 4, 4, false, Mask::none, {}, 0.0, false}}) {
    Spec c = s;
    Shape q = c.batch, k = c.batch, v = c.batch;
    q.insert(q.end(), {c.t, c.d});
    k.insert(k.end(), {c.s, c.d});
    v.insert(v.end(), {c.s, c.dv});
    t.push_back({.op = OpKind::k_attention,
                 .name = s.name,
                 .dtypes = kFloats,
                 .make = [c, q, k, v, kNegInf](CaseEnv& e) -> Inputs {
                   Inputs in = {e.data(q), e.data(k), e.data(v)};
                   if (c.mask == Mask::boolean) {
                     // Column 0 always attends, so no row is empty.
                     Tensor m = e.data(c.mask_shape, 0, 1, DType::boolean);
                     Tensor col0 = lt(arange(c.s, DType::i64, e.device()), 1);
                     in.push_back(where(col0, col0, m));
                   } else if (c.mask == Mask::floating) {
                     std::vector<double> mv(numel(c.mask_shape));
                     for (size_t i = 0; i < mv.size(); ++i)
                       mv[i] = i % 5 == 3 ? kNegInf : 0.25 * double(i % 4) - 0.5;
                     in.push_back(e.values(mv, c.mask_shape));
                   } else if (c.mask == Mask::masked_row) {
                     std::vector<double> mv(numel(c.mask_shape), 1.0);
                     for (int64_t j = 0; j < c.s; ++j) mv[1 * c.s + j] = 0.0;  // row 1: none
                     mv[0] = 0.0;
                     in.push_back(e.values(mv, c.mask_shape, DType::boolean));
                   }
                   return in;
                 },
                 .run =
                     [c](const Inputs& in, const CaseEnv&) {
                       Tensor mask = in.size() == 4 ? in[3] : Tensor();
                       return scaled_dot_product_attention(in[0], in[1], in[2], mask, c.causal,
                                                           c.scale);
                     },
                 .reduce_len = std::max(c.s, c.d),
                 .grad = s.grad});
  }
}

}  // namespace

void add_nn_cases(std::vector<OpCase>& t) {
  add_softmax_cases(t);
  add_layer_norm_cases(t);
  add_dropout_cases(t);
  add_cross_entropy_cases(t);
  add_attention_cases(t);
  add_attention_training_cases(t);
  add_cross_entropy_grad_cases(t);
  add_collective_cases(t);
}

}  // namespace loom::optest
