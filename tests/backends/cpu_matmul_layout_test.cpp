// cpu (oneDNN strided GEMM) vs reference for matmul with layout attrs
// (perm_a / perm_b / perm_out, set by the matmul_layout pass): head split
// and merge permutes with every transpose flag, all three attrs at once, a
// 3-D batch swap, bf16, a layout with no unit-stride matrix axis (the dense
// gather fallback), a broadcast batch dim (one GEMM per item), K = 0; and the
// shape inference error for a perm that is not a permutation.
#include <cmath>

#include "backends/cpu_test_util.h"
#include "loom/error.h"
#include "ops/infer.h"

namespace loom::cpu_test {
namespace {

using ops::OpKind;

Tolerance layout_tolerance(DType dt, int64_t k) {
  if (dt == DType::f32) return {1e-6, 1.2e-7 * double(std::max<int64_t>(1, k))};
  return {2e-2, 2e-2 * std::sqrt(double(std::max<int64_t>(1, k)))};
}

// Stored shape whose permute(., perm) is `logical`.
Shape layout_stored(const Shape& logical, const std::vector<int64_t>& perm) {
  if (perm.empty()) return logical;
  Shape s(logical.size());
  for (size_t i = 0; i < perm.size(); ++i) s[perm[i]] = logical[i];
  return s;
}

void check_matmul_layout(const Shape& la, const Shape& lb, const ops::Attrs& attrs, DType dt,
                         const std::string& what) {
  Operand a = random_operand(layout_stored(la, attrs.perm_a), dt, 61, -1, 1);
  Operand b = random_operand(layout_stored(lb, attrs.perm_b), dt, 62, -1, 1);
  int64_t k = attrs.trans_a ? la[la.size() - 2] : la.back();
  expect_match(OpKind::k_matmul, attrs, {a, b}, what + " " + ops::to_string(attrs),
               layout_tolerance(dt, k));
}

ops::Attrs layout_attrs(std::vector<int64_t> pa, std::vector<int64_t> pb, std::vector<int64_t> po,
                        bool ta = false, bool tb = false) {
  ops::Attrs a;
  a.perm_a = std::move(pa), a.perm_b = std::move(pb), a.perm_out = std::move(po);
  a.trans_a = ta, a.trans_b = tb;
  return a;
}

const std::vector<int64_t> kHeads = {0, 2, 1, 3};

TEST(CpuMatmulLayout, HeadSplitOperandsEveryTransposeFlag) {
  // Logical [2,3,40,16] x [2,3,16,24] (B2 H3, T40 D16), operands as stored.
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Shape la = ta ? Shape{2, 3, 16, 40} : Shape{2, 3, 40, 16};
      Shape lb = tb ? Shape{2, 3, 24, 16} : Shape{2, 3, 16, 24};
      check_matmul_layout(la, lb, layout_attrs(kHeads, {}, {}, ta, tb), DType::f32, "perm_a");
      check_matmul_layout(la, lb, layout_attrs({}, kHeads, {}, ta, tb), DType::f32, "perm_b");
      check_matmul_layout(la, lb, layout_attrs(kHeads, kHeads, kHeads, ta, tb), DType::f32, "all");
    }
}

TEST(CpuMatmulLayout, HeadMergeOutputAndBf16) {
  for (DType dt : {DType::f32, DType::bf16}) {
    check_matmul_layout({2, 3, 40, 40}, {2, 3, 40, 16}, layout_attrs({}, {}, kHeads), dt,
                        "perm_out");
    check_matmul_layout({2, 3, 40, 16}, {2, 3, 40, 16},
                        layout_attrs(kHeads, kHeads, {}, false, true), dt, "scores");
  }
}

TEST(CpuMatmulLayout, OtherLayouts) {
  // 3-D: batch and rows swapped ([T,B,K] stored, [B,T,K] read).
  check_matmul_layout({4, 24, 8}, {4, 8, 12}, layout_attrs({1, 0, 2}, {}, {1, 0, 2}), DType::f32,
                      "3-D");
  // The result stored with its rows innermost (a unit row stride).
  check_matmul_layout({2, 3, 8, 5}, {2, 3, 5, 7}, layout_attrs({}, {}, {3, 0, 1, 2}), DType::f32,
                      "rows innermost");
  // No unit stride in a's matrix (its last stored axis is a batch axis).
  check_matmul_layout({2, 3, 8, 5}, {2, 3, 5, 7}, layout_attrs({0, 3, 1, 2}, {}, {}), DType::f32,
                      "gather");
  // Broadcast batch dim: b's head axis is 1.
  check_matmul_layout({2, 3, 8, 5}, {2, 1, 5, 7}, layout_attrs(kHeads, {}, kHeads), DType::f32,
                      "broadcast");
  // K = 0: zeros.
  check_matmul_layout({2, 3, 4, 0}, {2, 3, 0, 5}, layout_attrs(kHeads, {}, kHeads), DType::f32,
                      "k0");
}

TEST(CpuMatmulLayout, BadPermIsAnError) {
  ops::TensorType t{{2, 3, 4, 5}, DType::f32};
  ops::Attrs a = layout_attrs({0, 2, 2, 3}, {}, {});
  try {
    ops::infer_type(OpKind::k_matmul, {t, {{2, 4, 3, 5}, DType::f32}}, a);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[matmul] perm_a=[0,2,2,3] is not a permutation"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace loom::cpu_test
