// LOOM_KERNEL_TIMES=1 (bench/roofline.h's per-kernel split): each kernel a
// lazy run launches is timed under "KernelTime.<op>" and the bytes of its
// operands and results are counted under "KernelBytes.<op>"; without the
// switch neither metric appears. LOOM_KERNEL_TIMES=2 adds one
// "KernelDetail.<label>" timer per step.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/scoped_env.h"
#include "lazy/dispatch.h"
#include "lazy/lazy_test_util.h"

namespace loom {
namespace {

// One matmul [5, 7] x [7, 3] and an elementwise chain the compiler fuses.
void run_small_step() {
  Tensor a = randn({5, 7}).to("lazy"), b = randn({7, 3}).to("lazy");
  Tensor y = exp(matmul(a, b) * 2.0 + 1.0);
  y.to(Device("cpu"));
}

TEST(KernelTimes, EachKernelIsTimedAndItsBytesCountedWhenAskedFor) {
  testing::reset_lazy();
  testing::ScopedEnv on("LOOM_KERNEL_TIMES", "1");
  run_small_step();
  EXPECT_EQ(metrics::timer_count("KernelTime.matmul"), 1);
  EXPECT_GT(metrics::timer_total_ns("KernelTime.matmul"), 0);
  // f32: A [5, 7] + B [7, 3] read, C [5, 3] written.
  EXPECT_EQ(metrics::counter("KernelBytes.matmul"), (5 * 7 + 7 * 3 + 5 * 3) * 4);
  EXPECT_EQ(metrics::timer_count("KernelTime.fused"), 1);
  // The fused group reads C and writes y, both [5, 3] f32, and reads the
  // scalars 2.0 and 1.0 where they are operands rather than constants.
  EXPECT_GE(metrics::counter("KernelBytes.fused"), 2 * 5 * 3 * 4);
  EXPECT_LE(metrics::counter("KernelBytes.fused"), 2 * 5 * 3 * 4 + 2 * 4);
}

TEST(KernelTimes, LevelTwoTimesEachStepUnderItsLabel) {
  testing::reset_lazy();
  testing::ScopedEnv on("LOOM_KERNEL_TIMES", "2");
  run_small_step();
  EXPECT_EQ(metrics::timer_count("KernelTime.matmul"), 1);
  EXPECT_EQ(metrics::timer_count("KernelDetail.matmul[5,3]"), 1);
  EXPECT_EQ(metrics::timer_total_ns("KernelDetail.matmul[5,3]"),
            metrics::timer_total_ns("KernelTime.matmul"));
  // The fused group's label names its body ops (exp last) and its shape.
  nlohmann::json j = nlohmann::json::parse(metrics::report_json());
  std::vector<std::string> fused;
  for (const auto& [name, t] : j["timers"].items())
    if (name.rfind("KernelDetail.fused{", 0) == 0) fused.push_back(name);
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_NE(fused[0].find(" exp}[5,3]"), std::string::npos) << fused[0];
  EXPECT_EQ(metrics::timer_count(fused[0]), 1);
}

TEST(KernelTimes, NothingIsTimedWithoutTheSwitch) {
  testing::reset_lazy();
  testing::ScopedEnv off("LOOM_KERNEL_TIMES", "0");
  run_small_step();
  EXPECT_EQ(metrics::timer_count("KernelTime.matmul"), 0);
  EXPECT_EQ(metrics::counter("KernelBytes.matmul"), 0);
  EXPECT_EQ(metrics::timer_count("KernelTime.fused"), 0);
  EXPECT_EQ(metrics::timer_count("KernelDetail.matmul[5,3]"), 0);
}

}  // namespace
}  // namespace loom
