// cpu (oneDNN) vs reference for matmul and attention: awkward M/K/N, all
// four transpose layouts, every batch pattern the kernel distinguishes (no
// batch, a's batch folded into M, equal batches, one side broadcast, general
// broadcast), K = 0 and empty outputs, bf16/f16; attention with causal and
// padding masks, bool and float masks, T != S, fully masked rows, blocks of
// query rows.
#include <cmath>

#include "backends/cpu/gemm.h"
#include "backends/cpu_test_util.h"

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
  a.scalar = c.scale;
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
  const backends::Backend& ref = backends::reference_backend();
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
