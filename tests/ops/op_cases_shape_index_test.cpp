// Op test table, data movement and indexing: reshape, permute, expand,
// slice, concat; gather, index_select, index_add, index_copy, scatter_add,
// embedding, one_hot. Index operands are random in range (repeats on
// purpose: the scatter-adds must accumulate), except index_copy's, which
// are distinct (a repeated row is overwritten: no gradient reaches it).
// (Table entries only; see op_cases.h.)
#include "ops/op_cases.h"

// Cases are designated initializers that leave later fields at their defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace loom::optest {
namespace {

using ops::OpKind;
using Axes = std::vector<int64_t>;

OpCase unary_case(OpKind op, const char* name, Shape shape, std::function<Tensor(const Tensor&)> fn,
                  std::vector<DType> dtypes = kAll) {
  return {.op = op,
          .name = name,
          .dtypes = std::move(dtypes),
          .make = [shape](CaseEnv& e) -> Inputs { return {e.data(shape)}; },
          .run = [fn](const Inputs& in, const CaseEnv&) { return fn(in[0]); }};
}

void add_shape_cases(std::vector<OpCase>& t) {
  auto reshape_to = [](Shape s) { return [s](const Tensor& x) { return reshape(x, s); }; };
  t.push_back(unary_case(OpKind::k_reshape, "merge", {2, 3, 4}, reshape_to({6, 4})));
  t.push_back(unary_case(OpKind::k_reshape, "minus_one", {2, 3, 4}, reshape_to({-1, 2})));
  t.push_back(unary_case(OpKind::k_reshape, "to_rank0", {1, 1}, reshape_to({})));
  t.push_back(unary_case(OpKind::k_reshape, "from_rank0", {}, reshape_to({1, 1, 1})));
  t.push_back(unary_case(OpKind::k_reshape, "empty", {0, 3}, reshape_to({3, 0})));
  t.push_back(unary_case(OpKind::k_reshape, "flatten_middle", {2, 3, 5, 1},
                         [](const Tensor& x) { return flatten(x, 1, 2); }));
  t.push_back(unary_case(OpKind::k_reshape, "unsqueeze_squeeze", {3, 7},
                         [](const Tensor& x) { return squeeze(unsqueeze(x, 1), 0); }));

  auto perm = [](Axes p) { return [p](const Tensor& x) { return permute(x, p); }; };
  t.push_back(unary_case(OpKind::k_permute, "rank3", {2, 3, 4}, perm({2, 0, 1})));
  t.push_back(unary_case(OpKind::k_permute, "transpose_last", {3, 1, 5},
                         [](const Tensor& x) { return transpose(x, -1, -2); }));
  t.push_back(unary_case(OpKind::k_permute, "size1_rank4", {1, 4, 1, 3}, perm({3, 1, 0, 2})));
  t.push_back(unary_case(OpKind::k_permute, "negative_perm", {2, 5, 3}, perm({-1, 0, -2})));
  t.push_back(unary_case(OpKind::k_permute, "empty", {0, 2, 3}, perm({1, 2, 0})));
  t.push_back(unary_case(OpKind::k_permute, "odd_17x9", {17, 9}, perm({1, 0})));

  auto expand_to = [](Shape s) { return [s](const Tensor& x) { return expand(x, s); }; };
  t.push_back(unary_case(OpKind::k_expand, "column", {3, 1}, expand_to({3, 5})));
  t.push_back(unary_case(OpKind::k_expand, "new_leading", {4}, expand_to({2, 3, 4})));
  t.push_back(unary_case(OpKind::k_expand, "minus_one", {1, 4}, expand_to({3, -1})));
  t.push_back(unary_case(OpKind::k_expand, "rank0", {}, expand_to({2, 3})));
  t.push_back(unary_case(OpKind::k_expand, "to_empty", {1, 3}, expand_to({0, 3})));
  t.push_back(unary_case(OpKind::k_expand, "middle_17", {2, 1, 3}, expand_to({2, 17, 3})));

  auto sl = [](int64_t axis, int64_t start, int64_t end, int64_t step) {
    return [=](const Tensor& x) { return slice(x, axis, start, end, step); };
  };
  t.push_back(unary_case(OpKind::k_slice, "step2", {4, 9}, sl(1, 1, 8, 2)));
  t.push_back(unary_case(OpKind::k_slice, "negative_start", {5, 3}, sl(0, -3, 5, 1)));
  t.push_back(unary_case(OpKind::k_slice, "clamped_step4", {6}, sl(0, -100, 100, 4)));
  t.push_back(unary_case(OpKind::k_slice, "empty_result", {4, 5}, sl(1, 3, 1, 1)));
  t.push_back(unary_case(OpKind::k_slice, "rank3_middle", {2, 5, 3}, sl(1, 1, 4, 1)));
  // A last-axis piece of every row (GPT-2's q/k/v split): the cpu kernel
  // copies one contiguous run per row.
  t.push_back(unary_case(OpKind::k_slice, "rank3_last_axis_piece", {2, 3, 12}, sl(2, 4, 8, 1)));
  t.push_back(unary_case(OpKind::k_slice, "split_last_piece", {7, 3},
                         [](const Tensor& x) { return split(x, 3, 0)[2]; }));
  t.push_back(unary_case(OpKind::k_slice, "split_sizes", {2, 11}, [](const Tensor& x) {
    return split(x, {4, 0, 7}, -1)[2];
  }));

  struct ConcatSpec {
    const char* name;
    std::vector<Shape> shapes;
    int64_t axis;
  };
  for (const ConcatSpec& s :
       std::vector<ConcatSpec>{{"axis0_three", {{2, 3}, {1, 3}, {4, 3}}, 0},
                               {"last_axis", {{2, 2}, {2, 5}}, -1},
                               {"with_empty", {{2, 0}, {2, 3}}, 1},
                               {"rank3_middle", {{2, 1, 3}, {2, 4, 3}, {2, 2, 3}}, 1},
                               {"odd_rows", {{9, 5}, {8, 5}}, 0}}) {
    std::vector<Shape> shapes = s.shapes;
    int64_t axis = s.axis;
    t.push_back({.op = OpKind::k_concat,
                 .name = s.name,
                 .dtypes = kAll,
                 .make =
                     [shapes](CaseEnv& e) {
                       Inputs in;
                       for (const Shape& sh : shapes) in.push_back(e.data(sh));
                       return in;
                     },
                 .run = [axis](const Inputs& in, const CaseEnv&) { return concat(in, axis); }});
  }
}

// x in the case dtype, an index in [0, bound) of `index_dtype`, and for the
// scatter ops a source in the case dtype.
struct IndexSpec {
  const char* name;
  Shape x, index;
  int64_t axis, bound;
  DType index_dtype = DType::i64;
  Shape src = {};
  bool grad = true;
};

void add_gather_cases(std::vector<OpCase>& t) {
  for (const IndexSpec& s :
       std::vector<IndexSpec>{{"axis1", {3, 5}, {3, 4}, 1, 5},
                              {"axis0", {4, 3}, {2, 3}, 0, 4},
                              {"rank3_i32", {2, 3, 4}, {2, 3, 2}, 2, 4, DType::i32},
                              {"smaller_index", {4, 5}, {2, 3}, 1, 5},
                              {"empty_index", {3, 5}, {0, 5}, 0, 3, DType::i64, {}, false}}) {
    IndexSpec c = s;
    t.push_back(
        {.op = OpKind::k_gather,
         .name = s.name,
         .dtypes = kAll,
         .make = [c](CaseEnv& e) -> Inputs {
           return {e.data(c.x), e.ints(c.index, 0, c.bound, c.index_dtype)};
         },
         .run = [c](const Inputs& in, const CaseEnv&) { return gather(in[0], c.axis, in[1]); },
         .grad = s.grad});
  }
  for (const IndexSpec& s :
       std::vector<IndexSpec>{{"rows_repeat", {5, 4}, {6}, 0, 5},
                              {"cols_i32", {3, 7}, {3}, 1, 7, DType::i32},
                              {"middle", {2, 5, 3}, {4}, 1, 5},
                              {"negative_axis", {2, 9}, {2}, -1, 9},
                              {"empty_index", {5, 4}, {0}, 0, 5, DType::i64, {}, false}}) {
    IndexSpec c = s;
    t.push_back({.op = OpKind::k_index_select,
                 .name = s.name,
                 .dtypes = kAll,
                 .make = [c](CaseEnv& e) -> Inputs {
                   return {e.data(c.x), e.ints(c.index, 0, c.bound, c.index_dtype)};
                 },
                 .run = [c](const Inputs& in,
                            const CaseEnv&) { return index_select(in[0], c.axis, in[1]); },
                 .grad = s.grad});
  }
}

void add_scatter_cases(std::vector<OpCase>& t) {
  for (const IndexSpec& s :
       std::vector<IndexSpec>{{"rows_repeat", {5, 3}, {6}, 0, 5, DType::i64, {6, 3}},
                              {"cols_i32", {3, 4}, {2}, 1, 4, DType::i32, {3, 2}},
                              {"middle", {2, 4, 3}, {5}, 1, 4, DType::i64, {2, 5, 3}},
                              {"empty_index", {4, 3}, {0}, 0, 4, DType::i64, {0, 3}, false}}) {
    IndexSpec c = s;
    t.push_back({.op = OpKind::k_index_add,
                 .name = s.name,
                 .dtypes = kNumeric,
                 .make = [c](CaseEnv& e) -> Inputs {
                   return {e.data(c.x), e.ints(c.index, 0, c.bound, c.index_dtype), e.data(c.src)};
                 },
                 .run = [c](const Inputs& in,
                            const CaseEnv&) { return index_add(in[0], c.axis, in[1], in[2]); },
                 .grad = s.grad});
  }
  for (const IndexSpec& s : std::vector<IndexSpec>{
           {"axis1", {4, 5}, {4, 3}, 1, 5, DType::i64, {4, 3}},
           {"axis0_smaller", {5, 3}, {3, 2}, 0, 5, DType::i64, {3, 2}},
           {"rank3_i32_long_axis", {2, 3, 4}, {2, 3, 6}, 2, 4, DType::i32, {2, 3, 6}},
           {"empty_index", {3, 4}, {0, 4}, 0, 3, DType::i64, {0, 4}, false}}) {
    IndexSpec c = s;
    t.push_back({.op = OpKind::k_scatter_add,
                 .name = s.name,
                 .dtypes = kNumeric,
                 .make = [c](CaseEnv& e) -> Inputs {
                   return {e.data(c.x), e.ints(c.index, 0, c.bound, c.index_dtype), e.data(c.src)};
                 },
                 .run = [c](const Inputs& in,
                            const CaseEnv&) { return scatter_add(in[0], c.axis, in[1], in[2]); },
                 .grad = s.grad});
  }
}

// index_copy: self [x], distinct rows `rows` along `axis`, source [src].
void add_index_copy_cases(std::vector<OpCase>& t) {
  struct CopySpec {
    const char* name;
    Shape x;
    std::vector<double> rows;
    int64_t axis;
    Shape src;
    DType index_dtype = DType::i64;
    bool grad = true;
  };
  for (const CopySpec& s : std::vector<CopySpec>{
           {"rows", {5, 3}, {3, 0}, 0, {2, 3}},
           {"cols_i32", {3, 7}, {6, 1, 4}, 1, {3, 3}, DType::i32},
           {"kv_cache_rows", {2, 3, 6, 4}, {4}, 2, {2, 3, 1, 4}},  // [B, H, L, D], one new row
           {"prompt_rows", {1, 2, 9, 5}, {0, 1, 2, 3, 4}, 2, {1, 2, 5, 5}},
           {"negative_axis", {2, 9}, {8, 0}, -1, {2, 2}},
           {"all_rows_permuted", {4, 6}, {2, 0, 3, 1}, 0, {4, 6}},
           {"empty_index", {4, 3}, {}, 0, {0, 3}, DType::i64, false}}) {
    CopySpec c = s;
    t.push_back({.op = OpKind::k_index_copy,
                 .name = s.name,
                 .dtypes = kAll,
                 .make = [c](CaseEnv& e) -> Inputs {
                   Shape n = {static_cast<int64_t>(c.rows.size())};
                   return {e.data(c.x), e.values(c.rows, n, c.index_dtype), e.data(c.src)};
                 },
                 .run = [c](const Inputs& in,
                            const CaseEnv&) { return index_copy(in[0], c.axis, in[1], in[2]); },
                 .grad = s.grad});
  }
}

void add_embedding_cases(std::vector<OpCase>& t) {
  for (const IndexSpec& s :
       std::vector<IndexSpec>{{"ids_2d", {10, 6}, {2, 3}, 0, 10},
                              {"ids_rank0", {4, 5}, {}, 0, 4},
                              {"ids_i32_repeat", {3, 7}, {9}, 0, 3, DType::i32},
                              {"wide_37", {4, 37}, {5}, 0, 4, DType::i64, {}, false},
                              {"empty_ids", {5, 3}, {0}, 0, 5, DType::i64, {}, false}}) {
    IndexSpec c = s;
    t.push_back({.op = OpKind::k_embedding,
                 .name = s.name,
                 .dtypes = kNumeric,
                 .make = [c](CaseEnv& e) -> Inputs {
                   return {e.data(c.x), e.ints(c.index, 0, c.bound, c.index_dtype)};
                 },
                 .run = [](const Inputs& in, const CaseEnv&) { return embedding(in[0], in[1]); },
                 .grad = s.grad});
  }
  struct OneHot {
    const char* name;
    Shape ids;
    int64_t classes;
  };
  for (const OneHot& s : std::vector<OneHot>{
           {"ids_1d", {5}, 7}, {"ids_2d", {2, 3}, 4}, {"rank0", {}, 3}, {"empty", {0}, 5}}) {
    Shape ids = s.ids;
    int64_t classes = s.classes;
    std::optional<ops::Attrs> attrs;
    if (std::string(s.name) == "ids_1d") {
      attrs = ops::Attrs{};
      attrs->num_classes = classes;
    }
    t.push_back(
        {.op = OpKind::k_one_hot,
         .name = s.name,
         .dtypes = {DType::i64, DType::i32},
         .make = [ids, classes](CaseEnv& e) -> Inputs {
           return {e.ints(ids, 0, classes, e.dtype())};
         },
         .run = [classes](const Inputs& in, const CaseEnv&) { return one_hot(in[0], classes); },
         .attrs = attrs});
  }
}

}  // namespace

void add_shape_index_cases(std::vector<OpCase>& t) {
  add_shape_cases(t);
  add_gather_cases(t);
  add_scatter_cases(t);
  add_index_copy_cases(t);
  add_embedding_cases(t);
}

}  // namespace loom::optest
