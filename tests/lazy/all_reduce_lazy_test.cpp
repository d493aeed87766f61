// The all_reduce op on the lazy device in one process (the one-rank group):
// traced into the step graph, the same graph key every step (the second step
// is a cache hit, new values cause no recompile) and counted once per run
// in AllReduceCount / AllReduceBytes. Several ranks: tests/distributed/.
#include <gtest/gtest.h>

#include "loom/collective.h"
#include "loom/error.h"
#include "loom/lazy.h"
#include "loom/metrics.h"
#include "loom/ops.h"

namespace loom {
namespace {

TEST(AllReduceLazy, SameGraphEveryStepAndCountedPerRun) {
  if (dist::world_size() != 1) GTEST_SKIP() << "the test process is one of several ranks";
  lazy::clear_compile_cache();
  metrics::reset();
  for (int step = 0; step < 3; ++step) {
    Tensor x = tensor({1.f + step, 2.f, -3.f}, {3}, "lazy");
    Tensor y = all_reduce(x * 2.0, dist::ReduceOp::mean);
    lazy::mark_step();
    EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{2.f * (1 + step), 4.f, -6.f}));
  }
  EXPECT_EQ(metrics::counter("UncachedCompile"), 1);
  EXPECT_EQ(metrics::counter("CachedCompile"), 2);
  EXPECT_EQ(metrics::counter("AllReduceCount"), 3);
  EXPECT_EQ(metrics::counter("AllReduceBytes"), 3 * 12);
}

TEST(AllReduceLazy, BadArgumentsNameTheOp) {
  Tensor b = cast(tensor({1.f}, {1}), DType::boolean);
  try {
    all_reduce(b);
    FAIL() << "bool all_reduce did not throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[all_reduce] dtype bool is not supported");
  }
  try {
    all_reduce(tensor({1.f}, {1}), dist::ReduceOp::max);
    FAIL() << "max all_reduce did not throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[all_reduce] reduce op max is not supported (sum, mean)");
  }
}

}  // namespace
}  // namespace loom
