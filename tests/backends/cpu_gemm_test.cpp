// cpu (oneDNN) vs reference for matmul and attention: awkward M/K/N, all
// four transpose layouts, every batch pattern the kernel distinguishes (no
// batch, a's batch folded into M, equal batches, one side broadcast, general
// broadcast), K = 0 and empty outputs, bf16/f16; one-row products (gemv.h:
// across its chunk and column-block edges, taken by gemm(), the same bits at
// every thread count); attention with causal and padding masks, bool and
// float masks, T != S, fully masked rows, blocks of query rows.
#include <cmath>
#include <cstring>

#include "backends/cpu/gemm.h"
#include "backends/cpu/gemv.h"
#include "backends/cpu_test_util.h"
#include "backends/reference/reference.h"
#include "loom/parallel.h"

namespace loom::cpu_test {
namespace {

using ops::OpKind;

// Tolerance for a length-k dot product of values in [-1, 1]: rounding of k
// f32 products and sums (worst case ~k ulp of the largest partial sum).
Tolerance gemm_tolerance(DType dt, int64_t k) {
  if (dt == DType::f32) return {1e-6, 1.2e-7 * double(std::max<int64_t>(1, k))};
  return {2e-2, 2e-2 * std::sqrt(double(std::max<int64_t>(1, k)))};
}

Shape matrix(const Shape& batch, int64_t rows, int64_t cols, bool trans) {
  Shape s = batch;
  s.push_back(trans ? cols : rows);
  s.push_back(trans ? rows : cols);
  return s;
}

void check_matmul(const Shape& ba, const Shape& bb, int64_t m, int64_t k, int64_t n, bool ta,
                  bool tb, DType dt) {
  Operand a = random_operand(matrix(ba, m, k, ta), dt, 31, -1, 1);
  Operand b = random_operand(matrix(bb, k, n, tb), dt, 32, -1, 1);
  ops::Attrs attrs;
  attrs.trans_a = ta;
  attrs.trans_b = tb;
  expect_match(OpKind::k_matmul, attrs, {a, b},
               "matmul " + describe(a) + (ta ? "^T" : "") + " x " + describe(b) + (tb ? "^T" : ""),
               gemm_tolerance(dt, k));
}

TEST(CpuGemm, ShapesAndTransposes) {
  const int64_t kShapes[][3] = {{1, 1, 1},   {3, 5, 7},   {17, 33, 65}, {64, 128, 96},
                                {127, 1, 5}, {1, 300, 1}, {8, 8, 8},    {2, 1000, 3}};
  for (const auto& s : kShapes)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) check_matmul({}, {}, s[0], s[1], s[2], ta, tb, DType::f32);
}

TEST(CpuGemm, BatchPatterns) {
  const std::pair<Shape, Shape> kBatches[] = {
      {{4}, {}},                        // linear layer: a's batch folds into M
      {{2, 3}, {}},                     // two batch dims folded
      {{3}, {3}},                       // equal batches
      {{2, 3}, {2, 3}},    {{}, {4}},   // a broadcast over b's batch
      {{1}, {4}},          {{4}, {1}},  // b broadcast (with trans_a: not foldable)
      {{2, 1}, {1, 3}},                 // general broadcast
      {{2, 1, 2}, {3, 1}},
  };
  for (const auto& [ba, bb] : kBatches)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) check_matmul(ba, bb, 5, 6, 7, ta, tb, DType::f32);
}

TEST(CpuGemm, ReducedPrecisionDtypes) {
  for (DType dt : {DType::bf16, DType::f16})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        check_matmul({}, {}, 33, 40, 17, ta, tb, dt);
        check_matmul({3}, {}, 9, 16, 5, ta, tb, dt);
        check_matmul({2}, {2}, 9, 16, 5, ta, tb, dt);
      }
}

TEST(CpuGemm, EmptyAndZeroK) {
  check_matmul({}, {}, 4, 0, 3, false, false, DType::f32);  // zeros
  check_matmul({2}, {2}, 4, 0, 3, true, true, DType::f32);
  check_matmul({}, {}, 0, 5, 3, false, false, DType::f32);
  check_matmul({0}, {}, 4, 5, 3, false, false, DType::f32);
  check_matmul({3}, {3}, 4, 5, 0, false, true, DType::f32);
}

TEST(CpuGemm, LargeKAccuracy) {
  check_matmul({}, {}, 16, 4096, 16, false, false, DType::f32);
  check_matmul({}, {}, 16, 4096, 16, true, true, DType::f32);
}

// One-row f32 products (a generation step) take gemv.h's loops: every
// layout, k across the row chunks' edges, n across the column blocks' (4096)
// and above the parallel threshold, and a linear layer's [1,1,k] input.
TEST(CpuGemm, OneRowProductsMatchTheReference) {
  using backends::cpu::kGemvChunkRows;
  const int64_t kKs[] = {1, 5, kGemvChunkRows - 1, kGemvChunkRows, kGemvChunkRows + 1, 300, 1000};
  const int64_t kNs[] = {1, 3, 64, 2049, 4100};
  for (int64_t k : kKs)
    for (int64_t n : kNs)
      for (bool ta : {false, true})
        for (bool tb : {false, true}) check_matmul({}, {}, 1, k, n, ta, tb, DType::f32);
  check_matmul({1}, {}, 1, 256, 768, false, false, DType::f32);
  check_matmul({1}, {}, 1, 256, 1000, false, true, DType::f32);
}

// gemm() hands one-row f32 products to gemv(): the same bits as calling it
// (oneDNN sums in another order), and only those shapes.
TEST(CpuGemm, OneRowProductsTakeTheGemvLoops) {
  using backends::cpu::GemmShape;
  using backends::cpu::gemv_applies;
  for (bool tb : {false, true}) {
    const int64_t k = 768, n = 2304;
    Operand x = random_operand({1, k}, DType::f32, 53, -1, 1);
    Operand w = random_operand(tb ? Shape{n, k} : Shape{k, n}, DType::f32, 54, -1, 1);
    const auto* xs = static_cast<const float*>(x.buffer->data());
    const auto* ws = static_cast<const float*>(w.buffer->data());
    std::vector<float> by_gemm(n), by_gemv(n);
    backends::cpu::gemm(GemmShape{1, 1, n, k, false, tb}, DType::f32, xs, ws, by_gemm.data());
    backends::cpu::gemv(xs, ws, by_gemv.data(), k, n, tb);
    EXPECT_EQ(std::memcmp(by_gemm.data(), by_gemv.data(), n * sizeof(float)), 0)
        << "trans_b " << tb << ": gemm y[0] " << by_gemm[0] << ", gemv y[0] " << by_gemv[0];
  }
  EXPECT_TRUE(gemv_applies(GemmShape{1, 1, 768, 256}, DType::f32));
  EXPECT_TRUE(gemv_applies(GemmShape{1, 1, 50257, 768, false, true}, DType::f32));
  EXPECT_FALSE(gemv_applies(GemmShape{1, 2, 768, 256}, DType::f32));   // two rows: oneDNN
  EXPECT_FALSE(gemv_applies(GemmShape{3, 1, 768, 256}, DType::f32));   // a batch: oneDNN
  EXPECT_FALSE(gemv_applies(GemmShape{1, 1, 768, 256}, DType::bf16));  // f32 only
}

// The sums' order is fixed (gemv.h), so a one-row product has the same bits
// whether one thread or several run it: a token generated on 2 threads is
// the one generated on 1.
TEST(CpuGemm, OneRowProductsDoNotDependOnTheThreadCount) {
  int saved = get_num_threads();
  // k 1000: more row chunks than threads; k 200 and 100: fewer (2 and 1),
  // so the threads split the columns instead. All above kGemvParallelBytes.
  const std::pair<int64_t, int64_t> kShapes[] = {{1000, 700}, {200, 3000}, {100, 5000}};
  for (auto [k, n] : kShapes)
    for (bool tb : {false, true}) {
      Operand x = random_operand({1, k}, DType::f32, 51, -1, 1);
      Operand w = random_operand(tb ? Shape{n, k} : Shape{k, n}, DType::f32, 52, -1, 1);
      backends::cpu::GemmShape s{1, 1, n, k, false, tb};
      std::vector<float> one(n), many(n);
      set_num_threads(1);
      backends::cpu::gemm(s, DType::f32, x.buffer->data(), w.buffer->data(), one.data());
      for (int threads : {2, 3, 4}) {
        set_num_threads(threads);
        backends::cpu::gemm(s, DType::f32, x.buffer->data(), w.buffer->data(), many.data());
        EXPECT_EQ(std::memcmp(one.data(), many.data(), n * sizeof(float)), 0)
            << "k " << k << " trans_b " << tb << ", " << threads << " threads: y[0] " << many[0]
            << " vs " << one[0] << " on 1 thread";
      }
    }
  set_num_threads(saved);
}

TEST(CpuGemm, NativeReportsF32) { EXPECT_TRUE(backends::cpu::gemm_native(DType::f32)); }

struct AttentionCase {
  Shape q, k, v;
  bool causal;
  double scale;
};

void check_attention(const AttentionCase& c, const Operand* mask, DType dt,
                     const std::string& what) {
  Operand q = random_operand(c.q, dt, 41, -1, 1), k = random_operand(c.k, dt, 42, -1, 1);
  Operand v = random_operand(c.v, dt, 43, -1, 1);
  ops::Attrs a;
  a.causal = c.causal;
  a.scale = c.scale;
  std::vector<Operand> in = {q, k, v};
  if (mask) in.push_back(*mask);
  Tolerance tol = dt == DType::f32 ? Tolerance{2e-6, 2e-6} : tolerance_for(dt);
  expect_match(OpKind::k_attention, a, in, what + " " + describe(q) + " " + describe(k), tol);
}

TEST(CpuAttention, CausalScaleAndShapes) {
  const AttentionCase kCases[] = {
      {{2, 3, 5, 8}, {2, 3, 5, 8}, {2, 3, 5, 8}, false, 0},
      {{2, 3, 5, 8}, {2, 3, 5, 8}, {2, 3, 5, 8}, true, 0},
      {{1, 70, 16}, {1, 70, 16}, {1, 70, 12}, true, 0},  // several row blocks, Dv != D
      {{2, 6, 4}, {2, 9, 4}, {2, 9, 3}, true, 0.3},      // T < S, causal top-left
      {{2, 9, 4}, {2, 6, 4}, {2, 6, 3}, true, 0},        // T > S
      {{1, 1, 1, 3}, {1, 1, 1, 3}, {1, 1, 1, 2}, false, 0},
      {{3, 1, 5}, {3, 7, 5}, {3, 7, 5}, false, 2.0},
      {{4, 0, 5}, {4, 3, 5}, {4, 3, 5}, false, 0},  // no queries
      {{4, 2, 5}, {4, 0, 5}, {4, 0, 5}, false, 0},  // no keys: zeros
  };
  for (const AttentionCase& c : kCases)
    for (DType dt : {DType::f32, DType::bf16}) check_attention(c, nullptr, dt, "attention");
}

TEST(CpuAttention, GroupedQueryHeadsReadSharedKeyValueHeads) {
  // q heads 6 (and 4) over kv heads 2 (and 1); bf16 as well.
  const AttentionCase kCases[] = {
      {{2, 6, 5, 8}, {2, 2, 5, 8}, {2, 2, 5, 8}, false, 0},
      {{2, 6, 40, 8}, {2, 2, 40, 8}, {2, 2, 40, 4}, true, 0},
      {{1, 4, 3, 8}, {1, 1, 7, 8}, {1, 1, 7, 8}, true, 0.5},
      {{3, 2, 4}, {3, 7, 4}, {3, 7, 4}, false, 0},  // rank 3: dim -3 is the batch, equal
  };
  for (const AttentionCase& c : kCases)
    for (DType dt : {DType::f32, DType::bf16}) check_attention(c, nullptr, dt, "gqa");
  AttentionCase c{{2, 6, 40, 8}, {2, 3, 40, 8}, {2, 3, 40, 8}, true, 0};
  Operand padding = random_operand({2, 1, 1, 40}, DType::boolean, 54);
  check_attention(c, &padding, DType::f32, "gqa + padding mask");
}

// One query row (a decode step against a static KV cache) takes the dot
// product loops instead of the GEMMs: every head, GQA, the cache's row mask.
TEST(CpuAttention, OneQueryRowAgainstACache) {
  const AttentionCase kCases[] = {
      {{1, 12, 1, 64}, {1, 12, 135, 64}, {1, 12, 135, 64}, false, 0},
      {{2, 6, 1, 8}, {2, 2, 40, 8}, {2, 2, 40, 5}, false, 0.7},  // GQA, Dv != D
      {{1, 4, 1, 16}, {1, 4, 9, 16}, {1, 4, 9, 16}, true, 0},    // causal: key 0 only
  };
  for (const AttentionCase& c : kCases)
    for (DType dt : {DType::f32, DType::bf16}) check_attention(c, nullptr, dt, "one row");
  AttentionCase c{{1, 12, 1, 64}, {1, 12, 135, 64}, {1, 12, 135, 64}, false, 0};
  std::vector<double> rows(135, 0.0);
  for (int j = 0; j < 20; ++j) rows[j] = 1;  // the cache's first 20 rows are filled
  Operand mask = operand_of(rows, {1, 1, 1, 135}, DType::boolean);
  check_attention(c, &mask, DType::f32, "one row, cache mask");
}

// The oracle itself: grouped heads give what repeating k, v (transformers'
// repeat_kv) gives, exactly.
TEST(CpuAttention, ReferenceGroupedHeadsEqualRepeatedHeads) {
  Operand q = random_operand({2, 6, 5, 4}, DType::f32, 61, -1, 1);
  Operand k = random_operand({2, 2, 7, 4}, DType::f32, 62, -1, 1);
  Operand v = random_operand({2, 2, 7, 3}, DType::f32, 63, -1, 1);
  auto repeat = [](const Operand& x) {  // [2, 2, S, D] -> [2, 6, S, D]
    int64_t s = x.type.shape[2], d = x.type.shape[3];
    std::vector<double> out;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t h = 0; h < 6; ++h)
        for (int64_t i = 0; i < s * d; ++i)
          out.push_back(load_as_double(x.buffer->data(), DType::f32, (b * 2 + h / 3) * s * d + i));
    return operand_of(out, {2, 6, s, d}, DType::f32);
  };
  ops::Attrs a;
  a.causal = true;
  const backends::KernelBackend& ref = backends::reference_backend();
  std::vector<double> grouped = run_on(ref, OpKind::k_attention, a, {q, k, v});
  std::vector<double> repeated = run_on(ref, OpKind::k_attention, a, {q, repeat(k), repeat(v)});
  ASSERT_EQ(grouped.size(), repeated.size());
  for (size_t i = 0; i < grouped.size(); ++i) ASSERT_EQ(grouped[i], repeated[i]) << "at " << i;
}

TEST(CpuAttention, BoolAndFloatMasks) {
  AttentionCase c{{2, 3, 40, 8}, {2, 3, 40, 8}, {2, 3, 40, 8}, false, 0};
  for (bool causal : {false, true}) {
    c.causal = causal;
    Operand full = random_operand({2, 3, 40, 40}, DType::boolean, 50);
    Operand square = random_operand({40, 40}, DType::boolean, 51);
    Operand padding = random_operand({2, 1, 1, 40}, DType::boolean, 52);
    Operand additive = random_operand({2, 1, 40, 40}, DType::f32, 53, -3, 1);
    for (const Operand* m : {&full, &square, &padding, &additive})
      check_attention(c, m, DType::f32,
                      std::string("masked ") + describe(*m) + (causal ? " causal" : ""));
  }
}

TEST(CpuAttention, FullyMaskedRowsAreZero) {
  AttentionCase c{{1, 4, 3}, {1, 5, 3}, {1, 5, 2}, false, 0};
  std::vector<double> m(20, 1.0);
  for (int j = 0; j < 5; ++j) m[1 * 5 + j] = 0;  // row 1 attends to nothing
  Operand mask = operand_of(m, {4, 5}, DType::boolean);
  check_attention(c, &mask, DType::f32, "fully masked row");
  std::vector<double> f(20, 0.0);
  for (int j = 0; j < 5; ++j) f[2 * 5 + j] = -INFINITY;
  Operand fmask = operand_of(f, {1, 4, 5}, DType::f32);
  check_attention(c, &fmask, DType::f32, "fully -inf row");
}

}  // namespace
}  // namespace loom::cpu_test
