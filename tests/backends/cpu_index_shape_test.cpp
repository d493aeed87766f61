// cpu vs reference for the index kernels (embedding, index_select,
// index_add with repeated indices, index_copy, gather / scatter_add with
// index shapes smaller than the input outside the axis, one_hot; bad
// indices throw loom::Error), index_copy writing into its own (donated)
// buffer touches only the indexed rows (the others on read-only pages),
// and the data-movement kernels (every permutation of rank 3 and 4 for
// each element size, slice with steps, concat, expand, reshape).
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu_test_util.h"
#include "backends/kernel_backend.h"
#include "backends/kernel_executable.h"
#include "compiler/program.h"
#include "core/allocator.h"
#include "ir/graph.h"
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

TEST(CpuIndex, IndexCopyMatchesTheReference) {
  for (DType dt : kSizes)
    for (int64_t axis = 0; axis < 3; ++axis) {
      ops::Attrs a;
      a.axis = axis;
      Operand self = random_operand({4, 5, 6}, dt, 7);
      // Distinct rows (copied in parallel), and row 3 twice (the last wins).
      for (const std::vector<double>& rows :
           {std::vector<double>{3, 0, 1}, std::vector<double>{3, 0, 1, 3}})
        for (DType it : {DType::i64, DType::i32}) {
          Shape src_shape = self.type.shape;
          src_shape[axis] = static_cast<int64_t>(rows.size());
          Operand idx = operand_of(rows, {src_shape[axis]}, it);
          expect_match(OpKind::k_index_copy, a, {self, idx, random_operand(src_shape, dt, 8)},
                       "index_copy " + describe(self) + " axis " + std::to_string(axis) + ", " +
                           std::to_string(rows.size()) + " rows");
        }
    }
  ops::Attrs a0;
  expect_match(OpKind::k_index_copy, a0,
               {random_operand({4, 3}, DType::f32, 9), operand_of({}, {0}, DType::i64),
                random_operand({0, 3}, DType::f32, 10)},
               "index_copy of no rows");
}

// A KV cache [1, 2 heads, 8 rows, D] whose every row is one page of f32
// (D = page / 4), from a mapping of its own, so rows can be made read-only.
class PagedCache {
 public:
  static constexpr int64_t kHeads = 2, kRows = 8;
  PagedCache()
      : page_(static_cast<size_t>(sysconf(_SC_PAGESIZE))),
        buffer_(std::make_shared<Buffer>(kHeads * kRows * page_, allocator())) {
    for (int64_t i = 0; i < numel(shape()); ++i) data()[i] = static_cast<float>(i % 1000);
  }
  ~PagedCache() {  // a taken buffer may be unmapped by now: leave it
    if (buffer_) protect_all_but(-1, PROT_READ | PROT_WRITE);
  }
  int64_t d() const { return static_cast<int64_t>(page_ / sizeof(float)); }
  Shape shape() const { return {1, kHeads, kRows, d()}; }
  float* data() { return static_cast<float*>(base_); }
  /// The cache's buffer (run() must hold the only reference to donate it).
  BufferPtr take() { return std::move(buffer_); }
  /// `prot` on every row's page except row `row` of each head.
  void protect_all_but(int64_t row, int prot) {
    for (int64_t h = 0; h < kHeads; ++h)
      for (int64_t r = 0; r < kRows; ++r)
        if (r != row)
          ASSERT_EQ(mprotect(static_cast<char*>(base_) + (h * kRows + r) * page_, page_, prot), 0);
  }

 private:
  static Allocator& allocator() {
    static MappedAllocator mapped;  // page-aligned blocks
    return mapped;
  }
  size_t page_;
  BufferPtr buffer_;
  void* base_ = buffer_->data();
};

// Row 5 of each head of `cache` must hold `src` (one row per head), every
// other row its fill value (i % 1000).
bool rows_as_expected(const float* cache, const Operand& src, int64_t d) {
  const auto* s = static_cast<const float*>(src.buffer->data());
  for (int64_t h = 0; h < PagedCache::kHeads; ++h)
    for (int64_t r = 0; r < PagedCache::kRows; ++r)
      for (int64_t i = 0; i < d; ++i) {
        int64_t flat = (h * PagedCache::kRows + r) * d + i;
        float want = r == 5 ? s[h * d + i] : static_cast<float>(flat % 1000);
        if (cache[flat] != want) return false;
      }
  return true;
}

// The kernel alone, output = self's bytes: only row 5 of each head may be
// written; a store to any other row (a kernel writing the whole output,
// as the reference does) faults on the read-only pages in the child.
TEST(CpuIndex, IndexCopyIntoItsOwnBufferWritesOnlyTheIndexedRows) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto run_in_place = [](PagedCache& cache, const Operand& src) {
    ops::Attrs a;
    a.axis = 2;
    Operand idx = operand_of({5}, {1}, DType::i64);
    ops::TensorType t{cache.shape(), DType::f32};
    backends::OpCall call{OpKind::k_index_copy, &a, {}, {cache.data(), t}};
    call.inputs = {{cache.data(), t}, idx.view(), src.view()};
    backends::cpu_backend().run(call);
  };
  PagedCache cache;
  Operand src = random_operand({1, PagedCache::kHeads, 1, cache.d()}, DType::f32, 11);
  run_in_place(cache, src);
  EXPECT_TRUE(rows_as_expected(cache.data(), src, cache.d()));
  EXPECT_EXIT(
      {
        PagedCache guarded;
        guarded.protect_all_but(5, PROT_READ);
        run_in_place(guarded, src);
        std::exit(rows_as_expected(guarded.data(), src, guarded.d()) ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// Through the memory plan and the Executable: the new cache is planned
// into the donated old one, the run binds the same buffer, and the kernel
// writes only the new row (the others read-only in the child). Fails if the
// plan does not donate (a fresh output) or the kernel copies the whole cache.
TEST(CpuIndex, ADonatedCacheIsWrittenInPlaceByTheExecutable) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto run_step = [](PagedCache& cache, const Operand& src, bool* same_buffer) {
    std::string t = "f32[1,2,8," + std::to_string(cache.d()) + "]";
    std::string text = "graph(%0: " + t + ", %1: i64[1], %2: f32[1,2,1," +
                       std::to_string(cache.d()) +
                       "]) {\n  %3 = index_copy(%0, %1, %2) axis=2 : " + t + "\n  return (%3)\n}\n";
    auto program =
        std::make_shared<const compiler::Program>(compiler::lower(ir::parse(text), true));
    auto exe = backends::cpu_backend().compile_kernels(program);
    Operand idx = operand_of({5}, {1}, DType::i64);
    void* before = cache.data();
    std::vector<BufferPtr> inputs;  // not an initializer_list: it would hold a second reference
    inputs.push_back(cache.take());
    inputs.push_back(idx.buffer);
    inputs.push_back(src.buffer);
    auto outs = exe->run(std::move(inputs), {true, false, false});
    *same_buffer = exe->plan().donor[3] == 0 && outs.size() == 1 && outs[0]->data() == before;
    return outs;
  };
  PagedCache cache;
  Operand src = random_operand({1, PagedCache::kHeads, 1, cache.d()}, DType::f32, 12);
  bool same = false;
  auto outs = run_step(cache, src, &same);
  EXPECT_TRUE(same) << "the new cache is not the donated buffer";
  EXPECT_TRUE(rows_as_expected(static_cast<const float*>(outs[0]->data()), src, cache.d()));
  EXPECT_EXIT(
      {
        PagedCache guarded;
        guarded.protect_all_but(5, PROT_READ);
        bool in_place = false;
        auto o = run_step(guarded, src, &in_place);
        std::exit(
            in_place && rows_as_expected(static_cast<const float*>(o[0]->data()), src, guarded.d())
                ? 0
                : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(CpuIndex, OneHot) {
  ops::Attrs a;
  a.num_classes = 7;
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
  expect_throws(OpKind::k_index_copy, a1,
                {w, operand_of({1, 4}, {2}, DType::i32), random_operand({5, 2}, DType::f32, 4)},
                "[index_copy] index 4 is out of range for size 4");
  expect_throws(OpKind::k_index_copy, a1,
                {w, operand_of({-1}, {1}, DType::i64), random_operand({5, 1}, DType::f32, 5)},
                "[index_copy] index -1 is out of range for size 4");
  expect_throws(OpKind::k_gather, a1, {w, operand_of({0, 1, 2, 3, 4, 0}, {2, 3}, DType::i64)},
                "[gather] index 4 is out of range for size 4");
  expect_throws(OpKind::k_scatter_add, a1,
                {w, operand_of({0, -2}, {1, 2}, DType::i64), random_operand({1, 2}, DType::f32, 3)},
                "[scatter_add] index -2 is out of range for size 4");
  ops::Attrs oh;
  oh.num_classes = 3;
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
        a.perm = perm;
        std::string p;
        for (int64_t v : perm) p += std::to_string(v);
        expect_match(OpKind::k_permute, a, {x}, "permute " + describe(x) + " perm " + p);
      } while (std::next_permutation(perm.begin(), perm.end()));
    }
  ops::Attrs big;  // large 2-D transpose: many tiles, several threads
  big.perm = {1, 0};
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
        a.stop = std::min<int64_t>(end, x.type.shape[axis]);
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
