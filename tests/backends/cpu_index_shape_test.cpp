// cpu vs reference for the index kernels (embedding, index_select,
// index_add with repeated indices, gather / scatter_add with index shapes
// smaller than the input outside the axis, one_hot; bad indices throw
// loom::Error) and the data-movement kernels (every permutation of rank 3
// and 4 for each element size, slice with steps, concat, expand, reshape).
#include <algorithm>
#include <numeric>

#include "backends/cpu_test_util.h"
#include "loom/error.h"

namespace loom::cpu_test {
namespace {

using ops::OpKind;

const DType kSizes[] = {DType::boolean, DType::bf16, DType::f32, DType::i64};  // 1, 2, 4, 8 bytes

void expect_throws(OpKind op, const ops::Attrs& a, const std::vector<Operand>& in,
                   const char* message) {
  std::vector<ops::TensorType> types;
  for (const Operand& o : in) types.push_back(o.type);
  ops::TensorType out_t = ops::infer_type(op, types, a);
  BufferPtr out = make_buffer(std::max<size_t>(1, out_t.nbytes()));
  backends::OpCall call{op, &a, {}, {out->data(), out_t}};
  for (const Operand& o : in) call.inputs.push_back(o.view());
  try {
    backends::cpu_backend().run(call);
    ADD_FAILURE() << ops::op_name(op) << ": no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), message);
  }
}

TEST(CpuIndex, EmbeddingAndIndexSelect) {
  for (DType dt : kSizes) {
    Operand w = random_operand({11, 13}, dt, 1);
    for (DType it : {DType::i64, DType::i32}) {
      Operand ids = operand_of({0, 10, 3, 3, 7, 0}, {2, 3}, it);
      expect_match(OpKind::k_embedding, {}, {w, ids}, "embedding " + describe(w));
    }
    Operand x = random_operand({4, 5, 6}, dt, 2);
    for (int64_t axis = 0; axis < 3; ++axis) {
      ops::Attrs a;
      a.axis = axis;
      Operand idx = operand_of({3, 0, 2, 2, 1, 3, 0}, {7}, DType::i64);
      expect_match(OpKind::k_index_select, a, {x, idx},
                   "index_select axis " + std::to_string(axis));
    }
  }
  expect_match(OpKind::k_embedding, {},
               {random_operand({5, 4}, DType::f32, 3), operand_of({}, {0}, DType::i64)},
               "embedding no ids");
}

TEST(CpuIndex, IndexAddRepeatedIndices) {
  for (DType dt : {DType::f32, DType::bf16, DType::i64, DType::i32, DType::boolean})
    for (int64_t axis = 0; axis < 3; ++axis) {
      ops::Attrs a;
      a.axis = axis;
      Operand base = random_operand({4, 5, 600}, dt, 4);
      Shape src_shape = {4, 5, 600};
      src_shape[axis] = 6;
      Operand idx = operand_of({1, 3, 1, 0, 3, 1}, {6}, DType::i64);
      expect_match(OpKind::k_index_add, a, {base, idx, random_operand(src_shape, dt, 5)},
                   "index_add " + describe(base) + " axis " + std::to_string(axis));
    }
}

TEST(CpuIndex, GatherScatterAddSmallerIndex) {
  for (DType dt : {DType::f32, DType::bf16, DType::i64, DType::boolean})
    for (int64_t axis = 0; axis < 3; ++axis) {
      Shape xs = {5, 6, 7}, is = {4, 3, 7};  // index smaller than x outside axis
      is[axis] = 9;
      ops::Attrs a;
      a.axis = axis;
      Operand x = random_operand(xs, dt, 6);
      Operand idx = random_operand(is, DType::i64, 7, 0, xs[axis] - 1);
      expect_match(OpKind::k_gather, a, {x, idx},
                   "gather axis " + std::to_string(axis) + " " + describe(x));
      if (dt != DType::boolean)
        expect_match(OpKind::k_scatter_add, a, {x, idx, random_operand(is, dt, 8)},
                     "scatter_add axis " + std::to_string(axis) + " " + describe(x));
      Shape same = xs;  // index with x's shape: the dense path
      same[axis] = 2;
      Operand idx2 = random_operand(same, DType::i32, 9, 0, xs[axis] - 1);
      expect_match(OpKind::k_gather, a, {x, idx2}, "gather dense axis " + std::to_string(axis));
      if (dt != DType::boolean)
        expect_match(OpKind::k_scatter_add, a, {x, idx2, random_operand(same, dt, 10)},
                     "scatter_add dense axis " + std::to_string(axis));
    }
}

TEST(CpuIndex, OneHot) {
  ops::Attrs a;
  a.index = 7;
  expect_match(OpKind::k_one_hot, a, {operand_of({0, 6, 3, 3}, {2, 2}, DType::i64)}, "one_hot");
}

TEST(CpuIndex, BadIndicesThrow) {
  Operand w = random_operand({5, 4}, DType::f32, 1);
  expect_throws(OpKind::k_embedding, {}, {w, operand_of({1, 5}, {2}, DType::i64)},
                "[embedding] index 5 is out of range for size 5");
  expect_throws(OpKind::k_embedding, {}, {w, operand_of({-1}, {1}, DType::i32)},
                "[embedding] index -1 is out of range for size 5");
  ops::Attrs a1;
  a1.axis = 1;
  expect_throws(OpKind::k_index_select, a1, {w, operand_of({0, 4}, {2}, DType::i64)},
                "[index_select] index 4 is out of range for size 4");
  expect_throws(OpKind::k_index_add, a1,
                {w, operand_of({9}, {1}, DType::i64), random_operand({5, 1}, DType::f32, 2)},
                "[index_add] index 9 is out of range for size 4");
  expect_throws(OpKind::k_gather, a1, {w, operand_of({0, 1, 2, 3, 4, 0}, {2, 3}, DType::i64)},
                "[gather] index 4 is out of range for size 4");
  expect_throws(OpKind::k_scatter_add, a1,
                {w, operand_of({0, -2}, {1, 2}, DType::i64), random_operand({1, 2}, DType::f32, 3)},
                "[scatter_add] index -2 is out of range for size 4");
  ops::Attrs oh;
  oh.index = 3;
  expect_throws(OpKind::k_one_hot, oh, {operand_of({3}, {1}, DType::i64)},
                "[one_hot] index 3 is out of range for size 3");
}

TEST(CpuShape, PermuteEveryPermutation) {
  for (const Shape& shape : {Shape{3, 37, 41}, Shape{2, 3, 33, 35}, Shape{1, 40, 1, 70}})
    for (DType dt : kSizes) {
      std::vector<int64_t> perm(shape.size());
      std::iota(perm.begin(), perm.end(), 0);
      Operand x = random_operand(shape, dt, 11);
      do {
        ops::Attrs a;
        a.axes = perm;
        std::string p;
        for (int64_t v : perm) p += std::to_string(v);
        expect_match(OpKind::k_permute, a, {x}, "permute " + describe(x) + " perm " + p);
      } while (std::next_permutation(perm.begin(), perm.end()));
    }
  ops::Attrs big;  // large 2-D transpose: many tiles, several threads
  big.axes = {1, 0};
  expect_match(OpKind::k_permute, big, {random_operand({300, 517}, DType::f32, 12)},
               "transpose 300x517");
}

TEST(CpuShape, SliceConcatExpandReshape) {
  for (DType dt : kSizes) {
    Operand x = random_operand({6, 7, 9}, dt, 13);
    for (int64_t axis = 0; axis < 3; ++axis)
      for (auto [start, end, step] :
           {std::tuple{0, 5, 1}, std::tuple{1, 6, 2}, std::tuple{2, 2, 1}, std::tuple{0, 6, 3}}) {
        ops::Attrs a;
        a.axis = axis;
        a.start = start;
        a.end = std::min<int64_t>(end, x.type.shape[axis]);
        a.step = step;
        expect_match(OpKind::k_slice, a, {x}, "slice axis " + std::to_string(axis));
      }
    for (int64_t axis = 0; axis < 3; ++axis) {
      Shape s1 = {6, 7, 9}, s2 = {6, 7, 9};
      s1[axis] = 2;
      s2[axis] = 0;
      ops::Attrs a;
      a.axis = axis;
      expect_match(OpKind::k_concat, a,
                   {x, random_operand(s1, dt, 14), random_operand(s2, dt, 15), x},
                   "concat axis " + std::to_string(axis));
    }
    for (const auto& [from, to] :
         {std::pair<Shape, Shape>{{7, 1}, {3, 7, 50}}, std::pair<Shape, Shape>{{1, 9}, {7, 9}},
          std::pair<Shape, Shape>{{}, {4, 4}}, std::pair<Shape, Shape>{{2, 1, 3}, {2, 5, 3}},
          std::pair<Shape, Shape>{{5}, {0, 5}}}) {
      ops::Attrs a;
      a.shape = to;
      expect_match(OpKind::k_expand, a, {random_operand(from, dt, 16)},
                   "expand to " + to_string(to));
    }
    ops::Attrs r;
    r.shape = {9, 42};
    expect_match(OpKind::k_reshape, r, {x}, "reshape");
  }
}

}  // namespace
}  // namespace loom::cpu_test
