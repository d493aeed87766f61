// Which precision a requested autocast runs in (loom/autocast.h):
// choose_autocast's decision table, autocast_native against the cpu
// backend's own ISA probe (oneDNN's effective ISA, which ONEDNN_MAX_CPU_ISA
// lowers), the reference backend (never native), and the
// LOOM_AUTOCAST_NATIVE override with its error for a bad value.
#include <gtest/gtest.h>

#include "backends/cpu/gemm.h"
#include "common/scoped_env.h"
#include "loom/autocast.h"

namespace loom {
namespace {

TEST(AutocastChoice, NativeBf16RunsAutocast) {
  AutocastChoice c = choose_autocast(true, DType::bf16, true);
  EXPECT_TRUE(c.enabled);
  EXPECT_NE(c.message.find("bfloat16 autocast"), std::string::npos) << c.message;
}

TEST(AutocastChoice, NoNativeBf16KeepsF32AndSaysWhy) {
  AutocastChoice c = choose_autocast(true, DType::bf16, false);
  EXPECT_FALSE(c.enabled);
  EXPECT_NE(c.message.find("precision: f32"), std::string::npos) << c.message;
  EXPECT_NE(c.message.find("no native bfloat16"), std::string::npos) << c.message;
}

TEST(AutocastChoice, NotRequestedIsF32EvenWhenNative) {
  EXPECT_FALSE(choose_autocast(false, DType::bf16, true).enabled);
  EXPECT_FALSE(choose_autocast(false, DType::bf16, false).enabled);
}

TEST(AutocastChoice, CpuAnswerIsTheIsaProbe) {
  testing::ScopedEnv unset("LOOM_AUTOCAST_NATIVE", std::nullopt);
  EXPECT_EQ(autocast_native(Device("cpu"), DType::bf16),
            backends::cpu::gemm_hardware_native(DType::bf16));
  EXPECT_EQ(autocast_native(Device("lazy"), DType::bf16),
            backends::cpu::gemm_hardware_native(DType::bf16));
  EXPECT_TRUE(autocast_native(Device("cpu"), DType::f32));
  EXPECT_FALSE(autocast_native(Device("cpu"), DType::f16)) << "no native f16 GEMM in oneDNN 2.x";
  // Native bf16 implies oneDNN has a non-reference bf16 kernel.
  if (backends::cpu::gemm_hardware_native(DType::bf16))
    EXPECT_TRUE(backends::cpu::gemm_native(DType::bf16));
}

TEST(AutocastChoice, ReferenceBackendIsNeverNative) {
  testing::ScopedEnv unset("LOOM_AUTOCAST_NATIVE", std::nullopt);
  EXPECT_FALSE(autocast_native(Device("cpu:reference"), DType::bf16));
}

TEST(AutocastChoice, EnvOverrides) {
  {
    testing::ScopedEnv env("LOOM_AUTOCAST_NATIVE", "0");
    EXPECT_FALSE(autocast_native(Device("cpu"), DType::bf16));
  }
  {
    testing::ScopedEnv env("LOOM_AUTOCAST_NATIVE", "1");
    EXPECT_TRUE(autocast_native(Device("cpu:reference"), DType::bf16));
  }
  testing::ScopedEnv env("LOOM_AUTOCAST_NATIVE", "yes");
  try {
    autocast_native(Device("cpu"), DType::bf16);
    FAIL() << "expected loom::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("LOOM_AUTOCAST_NATIVE='yes': expected 0 or 1"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace loom
