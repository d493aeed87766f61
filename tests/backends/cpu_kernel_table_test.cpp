// The cpu kernel table generated from ops.def (backends/cpu/registry.cpp):
// every op has an optimized kernel, an elementwise unary / binary op or a
// reduction gets its family's kernel, and every other op its own cpu_<name>.
#include <gtest/gtest.h>

#include <string>

#include "backends/cpu/kernels.h"
#include "ops/op_kind.h"

namespace loom::backends::cpu {
namespace {

TEST(CpuKernelTable, EveryOpHasItsFamilysOrItsOwnKernel) {
  for (int i = 0; i < ops::kNumOps; ++i) {
    const auto op = static_cast<ops::OpKind>(i);
    SCOPED_TRACE(std::string(ops::op_name(op)));
    Kernel k = optimized_kernel(op);
    ASSERT_NE(k, nullptr);
    if (ops::has_trait(op, ops::kUnary)) {
      EXPECT_EQ(k, &cpu_unary);
    } else if (ops::has_trait(op, ops::kBinary)) {
      EXPECT_EQ(k, &cpu_binary);
    } else if (ops::has_trait(op, ops::kReduce)) {
      EXPECT_EQ(k, &cpu_reduce);
    } else {
      EXPECT_NE(k, &cpu_unary);
      EXPECT_NE(k, &cpu_binary);
      EXPECT_NE(k, &cpu_reduce);
    }
  }
  // Spot checks of the own-kernel ops, by name.
  EXPECT_EQ(optimized_kernel(ops::OpKind::k_matmul), &cpu_matmul);
  EXPECT_EQ(optimized_kernel(ops::OpKind::k_where), &cpu_where);
  EXPECT_EQ(optimized_kernel(ops::OpKind::k_attention_backward), &cpu_attention_backward);
  EXPECT_EQ(optimized_kernel(ops::OpKind::k_all_reduce), &cpu_all_reduce);
  EXPECT_EQ(optimized_kernel(ops::OpKind::k_cast), &cpu_unary);
  EXPECT_EQ(optimized_kernel(ops::OpKind::k_eq), &cpu_binary);
  EXPECT_EQ(optimized_kernel(ops::OpKind::k_argmax), &cpu_reduce);
}

}  // namespace
}  // namespace loom::backends::cpu
