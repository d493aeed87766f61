// Op test table, reductions and matmul: sum, mean, max, min, var, argmax
// over axis sets with keepdim (rank 0, empty and size-1 dims included) and
// (batched, transposed, broadcast) matmul. (Table entries only; see op_cases.h.)
#include "ops/op_cases.h"

// Cases are designated initializers that leave later fields at their defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace loom::optest {
namespace {

using ops::OpKind;
using Axes = std::vector<int64_t>;

struct ReduceShape {
  const char* name;
  Shape shape;
  Axes axes;
  bool keepdim;
  int64_t len;  // elements per output
  bool grad;
};

const std::vector<ReduceShape>& reduce_shapes() {
  static const std::vector<ReduceShape> shapes = {
      {"all", {3, 5}, {}, false, 15, true},
      {"axis1_odd", {4, 13}, {1}, false, 13, true},
      {"axes02_keepdim", {3, 4, 5}, {0, 2}, true, 15, true},
      {"negative_axis", {2, 3, 4}, {-1}, false, 4, true},
      {"size1_axis", {5, 1}, {1}, true, 1, true},
      {"rank0", {}, {}, false, 1, true},
      {"rank0_axis0", {}, {0}, true, 1, true},
      {"long_row", {2, 300}, {1}, false, 300, false},
      {"empty_kept_dim", {0, 3}, {1}, false, 3, false},
  };
  return shapes;
}

void add_sum_like(std::vector<OpCase>& t, OpKind op, Tensor (*fn)(const Tensor&, const Axes&, bool),
                  std::vector<DType> dtypes, bool distinct) {
  for (const ReduceShape& r : reduce_shapes()) {
    Shape shape = r.shape;
    Axes axes = r.axes;
    bool keep = r.keepdim;
    t.push_back({.op = op,
                 .name = r.name,
                 .dtypes = dtypes,
                 .make = [shape, distinct](CaseEnv& e) -> Inputs {
                   return {distinct ? e.distinct(shape, 0.25) : e.data(shape)};
                 },
                 .run = [fn, axes, keep](const Inputs& in,
                                         const CaseEnv&) { return fn(in[0], axes, keep); },
                 .reduce_len = r.len,
                 .grad = r.grad});
  }
}

void add_reduce_cases(std::vector<OpCase>& t) {
  add_sum_like(t, OpKind::k_sum, sum, kAll, false);
  add_sum_like(t, OpKind::k_mean, mean, kFloats, false);
  add_sum_like(t, OpKind::k_max, max, kNumeric, true);
  add_sum_like(t, OpKind::k_min, min, kNumeric, true);
  // Reducing an empty axis: sum gives 0, mean NaN (as torch: 0 / 0).
  for (auto [op, fn] :
       {std::pair<OpKind, Tensor (*)(const Tensor&, const Axes&, bool)>{OpKind::k_sum, sum},
        {OpKind::k_mean, mean}}) {
    t.push_back({.op = op,
                 .name = "empty_reduced_dim",
                 .dtypes = kFloats,
                 .make = [](CaseEnv& e) -> Inputs {
                   return {e.data({0, 3})};
                 },
                 .run = [fn](const Inputs& in, const CaseEnv&) { return fn(in[0], {0}, false); },
                 .grad = false,
                 .nan_expected = op == OpKind::k_mean});
  }
  for (auto [op, fn] :
       {std::pair<OpKind, Tensor (*)(const Tensor&, const Axes&, bool)>{OpKind::k_max, max},
        {OpKind::k_min, min}}) {
    t.push_back({.op = op,
                 .name = "ties",
                 .dtypes = kAll,
                 .make = [](CaseEnv& e) -> Inputs {
                   return {e.grid({4, 6}, -1, 1)};
                 },
                 .run = [fn](const Inputs& in, const CaseEnv&) { return fn(in[0], {1}, false); },
                 .reduce_len = 6,
                 .grad = false});
  }
  for (const ReduceShape& r : reduce_shapes()) {
    if (r.len < 2 && !r.shape.empty()) continue;
    Shape shape = r.shape;
    Axes axes = r.axes;
    bool keep = r.keepdim;
    for (int64_t correction : {0, 1}) {
      t.push_back({.op = OpKind::k_var,
                   .name = std::string(r.name) + "_correction" + std::to_string(correction),
                   .dtypes = kFloats,
                   .make = [shape](CaseEnv& e) -> Inputs { return {e.data(shape)}; },
                   .run = [axes, keep, correction](
                              const Inputs& in,
                              const CaseEnv&) { return var(in[0], axes, correction, keep); },
                   .reduce_len = r.len,
                   .grad = r.grad && r.len > 1,
                   // One element with correction 1: 0 / 0, NaN as torch.var.
                   .nan_expected = r.len <= correction});
    }
  }
}

void add_argmax_cases(std::vector<OpCase>& t) {
  struct Spec {
    const char* name;
    Shape shape;
    int64_t axis;
    bool keepdim, ties;
  };
  for (const Spec& s : std::vector<Spec>{{"axis1", {4, 7}, 1, false, false},
                                         {"axis0_keepdim", {5, 3}, 0, true, false},
                                         {"negative_axis_rank3", {2, 3, 17}, -1, false, false},
                                         {"ties_first_index", {6, 5}, 1, false, true},
                                         {"rank0", {}, 0, false, false},
                                         {"empty_kept_dim", {0, 4}, 1, true, false}}) {
    Shape shape = s.shape;
    bool ties = s.ties;
    int64_t axis = s.axis;
    bool keep = s.keepdim;
    std::optional<ops::Attrs> attrs;
    if (t.empty() || t.back().op != OpKind::k_argmax) {
      attrs = ops::Attrs{};
      attrs->axes = {1};
    }
    t.push_back({.op = OpKind::k_argmax,
                 .name = s.name,
                 .dtypes = kNumeric,
                 .make = [shape, ties](CaseEnv& e) -> Inputs {
                   return {ties ? e.grid(shape, -1, 1) : e.distinct(shape)};
                 },
                 .run = [axis, keep](const Inputs& in,
                                     const CaseEnv&) { return argmax(in[0], axis, keep); },
                 .attrs = attrs});
  }
}

void add_matmul_cases(std::vector<OpCase>& t) {
  struct Spec {
    const char* name;
    Shape a, b;
    bool ta, tb, grad;
  };
  const std::vector<Spec> specs = {
      {"mk_kn", {3, 5}, {5, 4}, false, false, true},
      {"trans_a", {5, 3}, {5, 4}, true, false, true},
      {"trans_b", {3, 5}, {4, 5}, false, true, true},
      {"trans_both", {5, 3}, {4, 5}, true, true, true},
      {"batched", {2, 3, 5}, {2, 5, 4}, false, false, true},
      {"broadcast_batch", {2, 1, 3, 4}, {3, 4, 2}, false, false, true},
      {"batched_2d_rhs_trans_b", {2, 3, 4}, {5, 4}, false, true, true},
      // A linear layer's weight gradient folds the batch into rows (one GEMM).
      {"batched_2d_rhs", {2, 3, 4}, {4, 5}, false, false, true},
      {"rank4_2d_rhs_trans_b", {2, 2, 3, 4}, {5, 4}, false, true, true},
      {"k1", {4, 1}, {1, 3}, false, false, true},
      {"row_times_col", {1, 7}, {7, 1}, false, false, true},
      {"odd_17_19_23", {17, 19}, {19, 23}, false, false, false},
      {"odd_batched_trans", {3, 9, 33}, {3, 17, 9}, true, true, false},
      {"k0", {3, 0}, {0, 2}, false, false, false},
      {"m0", {0, 4}, {4, 3}, false, false, false},
  };
  for (const Spec& s : specs) {
    Shape sa = s.a, sb = s.b;
    bool ta = s.ta, tb = s.tb;
    int64_t k = ta ? sa[sa.size() - 2] : sa.back();
    t.push_back(
        {.op = OpKind::k_matmul,
         .name = s.name,
         .dtypes = kFloats,
         .make = [sa, sb](CaseEnv& e) -> Inputs {
           return {e.data(sa), e.data(sb)};
         },
         .run = [ta, tb](const Inputs& in, const CaseEnv&) { return matmul(in[0], in[1], ta, tb); },
         .reduce_len = std::max<int64_t>(k, 1),
         .grad = s.grad});
  }
}

}  // namespace

void add_reduce_matmul_cases(std::vector<OpCase>& t) {
  add_reduce_cases(t);
  add_argmax_cases(t);
  add_matmul_cases(t);
}

}  // namespace loom::optest
