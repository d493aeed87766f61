// The PJRT core (src/backends/xla/pjrt_*, xla_runtime, plugin_discovery):
// StableHLO text compiled by the installed plugin and run on host arrays,
// donation through tf.aliasing_output (and the CPU plugin's two donation
// defects: its stale XNNPACK packing, its non-donatable list), serialization, every addressable
// device, PJRT errors as loom::Error, the API version check against fake
// plugins, and the plugin discovery's messages. The plugin tests skip with
// the reason when no plugin is installed (and fail under CI=true).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "backends/xla/plugin_discovery.h"
#include "backends/xla/xla_runtime.h"
#include "backends/xla_test_util.h"
#include "common/error_of.h"
#include "common/scoped_env.h"
#if LOOM_WITH_PJRT
#include "backends/xla/pjrt_client.h"
#endif

namespace loom {
namespace {

using backends::xla::HostArray;
using testing::error_of;
using testing::ScopedEnv;

// out = a * b + 1 (elementwise) and the sum of out; `a` is donated to out.
constexpr const char* kXlaMulAddSum = R"(module @mul_add_sum {
  func.func public @main(%a: tensor<2x3xf32> {tf.aliasing_output = 0 : i32},
                         %b: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<f32>) {
    %one = stablehlo.constant dense<1.0> : tensor<2x3xf32>
    %m = stablehlo.multiply %a, %b : tensor<2x3xf32>
    %o = stablehlo.add %m, %one : tensor<2x3xf32>
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %s = stablehlo.reduce(%o init: %z) applies stablehlo.add across dimensions = [0, 1]
        : (tensor<2x3xf32>, tensor<f32>) -> tensor<f32>
    return %o, %s : tensor<2x3xf32>, tensor<f32>
  }
})";

const std::vector<float> kXlaA = {1, 2, 3, 4, 5, 6};
const std::vector<float> kXlaB = {0.5f, -1, 2, 0, 10, -0.25f};

std::vector<float> xla_expected_mul_add() {
  std::vector<float> out;
  for (size_t i = 0; i < kXlaA.size(); ++i) out.push_back(kXlaA[i] * kXlaB[i] + 1);
  return out;
}

TEST(XlaPjrt, RunsStableHloTextOnHostArrays) {
  LOOM_REQUIRE_XLA();
  auto outs = testing::run_stablehlo(kXlaMulAddSum, {HostArray::of({2, 3}, kXlaA, DType::f32),
                                                     HostArray::of({2, 3}, kXlaB, DType::f32)});
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[0].type, (ops::TensorType{{2, 3}, DType::f32}));
  EXPECT_EQ(outs[1].type, (ops::TensorType{{}, DType::f32}));
  std::vector<float> want = xla_expected_mul_add();
  EXPECT_EQ(outs[0].values<float>(), want);  // one multiply and one add: exact
  float sum = 0;
  for (float v : want) sum += v;
  EXPECT_FLOAT_EQ(outs[1].values<float>()[0], sum);
}

TEST(XlaPjrt, RunsOnEveryAddressableDevice) {
  LOOM_REQUIRE_XLA();
  backends::xla::XlaInfo info = backends::xla::xla_info();
  ASSERT_GE(info.device_count, 1);
  for (int d = 0; d < info.device_count; ++d) {
    auto outs = testing::run_stablehlo(
        kXlaMulAddSum,
        {HostArray::of({2, 3}, kXlaA, DType::f32), HostArray::of({2, 3}, kXlaB, DType::f32)}, d);
    EXPECT_EQ(outs[0].values<float>(), xla_expected_mul_add()) << "device " << d;
  }
  EXPECT_NE(error_of([&] {
              testing::run_stablehlo(kXlaMulAddSum, {}, info.device_count);
            }).find("addressable device"),
            std::string::npos);
}

TEST(XlaPjrt, CompileErrorIsLoomErrorWithXlaDiagnostic) {
  LOOM_REQUIRE_XLA();
  std::string e = error_of([] { testing::run_stablehlo("module { bad", {}); });
  EXPECT_NE(e.find("[xla] PJRT_Client_Compile: "), std::string::npos) << e;
  EXPECT_NE(e.find("error"), std::string::npos) << e;
}

TEST(XlaPjrt, InfoNamesPluginVersionAndPlatform) {
  LOOM_REQUIRE_XLA();
  backends::xla::XlaInfo info = backends::xla::xla_info();
  EXPECT_EQ(info.api_version.rfind("0.", 0), 0u) << info.api_version;
  EXPECT_EQ(info.header_version.rfind("0.", 0), 0u) << info.header_version;
  EXPECT_FALSE(info.platform_name.empty());
  EXPECT_NE(info.plugin_path.find(".so"), std::string::npos) << info.plugin_path;
}

#if LOOM_WITH_PJRT
using backends::xla::PjrtBuffer;
using backends::xla::PjrtExecutable;

TEST(XlaPjrt, DonatedArgumentIsConsumedUnlessKept) {
  LOOM_REQUIRE_XLA();
  const auto& client = backends::xla::xla_client();
  auto exe = client.compile(kXlaMulAddSum);
  ops::TensorType t{{2, 3}, DType::f32};
  for (bool keep : {false, true}) {
    auto a = client.from_host(kXlaA.data(), t, 0);
    auto b = client.from_host(kXlaB.data(), t, 0);
    std::vector<int64_t> keep_list;
    if (keep) keep_list.push_back(0);
    auto outs = exe->execute({a->get(), b->get()}, client.device(0), keep_list);
    EXPECT_EQ(a->is_deleted(), !keep) << "keep " << keep;  // its memory became out[0]
    EXPECT_FALSE(b->is_deleted());
    std::vector<float> got(6);
    client.to_host(*outs[0], got.data());
    EXPECT_EQ(got, xla_expected_mul_add());
    if (keep) {  // the kept input still holds its values
      client.to_host(*a, got.data());
      EXPECT_EQ(got, kXlaA);
    }
  }
}

// The reproducer of XLA:CPU's stale XNNPACK packing (docs/backends.md,
// "Donation"): y = x·W and W' = W + 1e-3·colsum(y), W aliased to W'. With W
// donated, W' is written over W's memory: the address stays, the values
// change. x is 1024 x 1024 and W 1024 x 256, the one-layer GPT-2's
// mlp.c_proj matmul, the one XLA:CPU ran through XNNPACK.
constexpr const char* kXlaStalePack = R"(module @stale_pack {
  func.func public @main(%x: tensor<1024x1024xf32>,
                         %w: tensor<1024x256xf32> {tf.aliasing_output = 1 : i32})
      -> (tensor<1024x256xf32>, tensor<1024x256xf32>) {
    %y = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
        : (tensor<1024x1024xf32>, tensor<1024x256xf32>) -> tensor<1024x256xf32>
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %c = stablehlo.reduce(%y init: %z) applies stablehlo.add across dimensions = [0]
        : (tensor<1024x256xf32>, tensor<f32>) -> tensor<256xf32>
    %b = stablehlo.broadcast_in_dim %c, dims = [1] : (tensor<256xf32>) -> tensor<1024x256xf32>
    %s = stablehlo.constant dense<1.0e-3> : tensor<1024x256xf32>
    %d = stablehlo.multiply %b, %s : tensor<1024x256xf32>
    %w2 = stablehlo.add %w, %d : tensor<1024x256xf32>
    return %y, %w2 : tensor<1024x256xf32>, tensor<1024x256xf32>
  }
})";

// Runs the reproducer compiled with `options` for 3 steps, W donated each
// step; per step, the largest |y - x·W| (x·W on the host, in double, from
// the W the device holds) over max(1, the largest |x·W|).
std::vector<double> xla_stale_pack_errors(const std::string& options) {
  const int m = 1024, k = 1024, n = 256;
  const auto& client = backends::xla::xla_client();
  auto exe = client.compile(kXlaStalePack, options);
  std::vector<float> xh(size_t(m) * k), wh(size_t(k) * n), yh(size_t(m) * n);
  // Positive means, so that colsum(y) and x's row sums are far from 0 and each
  // step's W' moves y by ~100x.
  for (size_t i = 0; i < xh.size(); ++i) xh[i] = float(i * 37 % 17) / 64;
  for (size_t i = 0; i < wh.size(); ++i) wh[i] = float(int(i * 11 % 13) - 4) / 32;
  auto x = client.from_host(xh.data(), {{m, k}, DType::f32}, 0);
  auto w = client.from_host(wh.data(), {{k, n}, DType::f32}, 0);
  std::vector<double> errors;
  for (int step = 0; step < 3; ++step) {
    auto outs = exe->execute({x->get(), w->get()}, client.device(0));
    EXPECT_TRUE(w->is_deleted()) << "step " << step << ": W was not donated";
    client.to_host(*outs[0], yh.data());
    double worst = 0, scale = 1;
    std::vector<double> want(n);
    for (int i = 0; i < m; ++i) {
      std::fill(want.begin(), want.end(), 0.0);
      for (int l = 0; l < k; ++l)
        for (int j = 0; j < n; ++j)
          want[j] += double(xh[size_t(i) * k + l]) * wh[size_t(l) * n + j];
      for (int j = 0; j < n; ++j) {
        worst = std::max(worst, std::abs(yh[size_t(i) * n + j] - want[j]));
        scale = std::max(scale, std::abs(want[j]));
      }
    }
    errors.push_back(worst / scale);
    w = std::move(outs[1]);
    client.to_host(*w, wh.data());
  }
  return errors;
}

// y follows W from step to step with W donated, as the client compiles
// (XNNPACK off on the CPU plugin). With XNNPACK on, steps 2 and 3 multiply
// by step 1's W (off by ~1 relative); a 1024-term f32 dot is within ~1e-5.
TEST(XlaPjrt, DonatedMatmulWeightIsReadAfreshEachStep) {
  LOOM_REQUIRE_XLA();
  const auto& client = backends::xla::xla_client();
  if (client.platform_name() == "cpu") {
    EXPECT_TRUE(client.xnnpack_off());
  }
  std::vector<double> errors = xla_stale_pack_errors(client.compile_options());
  for (size_t s = 0; s < errors.size(); ++s) EXPECT_LT(errors[s], 1e-4) << "step " << s + 1;
}

// The plugin's defect itself, with XNNPACK on (the plugin's default): it
// passes while XLA:CPU reuses a donated argument's stale packing. Run it
// (--gtest_also_run_disabled_tests) to see whether a new plugin still needs
// the workaround: a failure here means it does not.
TEST(XlaPjrt, DISABLED_XnnpackOnReadsAStaleDonatedMatmulWeight) {
  LOOM_REQUIRE_XLA();
  std::vector<double> errors = xla_stale_pack_errors(backends::xla::pjrt_compile_options(false));
  EXPECT_LT(errors[0], 1e-4);
  EXPECT_GT(errors[1], 1e-3);  // step 2 multiplied by step 1's W
}

// The plugin's second defect: once an aliased input is in
// non_donatable_input_indices, no later aliased input is donated. loom never
// passes that list (xla_executable.cpp). Like the test above, it passes
// while the plugin has the defect.
TEST(XlaPjrt, DISABLED_NonDonatableInputStopsLaterDonations) {
  LOOM_REQUIRE_XLA();
  const auto& client = backends::xla::xla_client();
  auto exe = client.compile(R"(module @two_aliases {
  func.func public @main(%a: tensor<4xf32> {tf.aliasing_output = 0 : i32},
                         %b: tensor<4xf32> {tf.aliasing_output = 1 : i32})
      -> (tensor<4xf32>, tensor<4xf32>) {
    %x = stablehlo.add %a, %b : tensor<4xf32>
    %y = stablehlo.multiply %a, %b : tensor<4xf32>
    return %x, %y : tensor<4xf32>, tensor<4xf32>
  }
})");
  const float v[4] = {1, 2, 3, 4};
  ops::TensorType t{{4}, DType::f32};
  auto a = client.from_host(v, t, 0);
  auto b = client.from_host(v, t, 0);
  auto outs = exe->execute({a->get(), b->get()}, client.device(0), {0});
  EXPECT_FALSE(a->is_deleted());
  EXPECT_FALSE(b->is_deleted());  // asked to be donated, kept
}

TEST(XlaPjrt, SerializedExecutableLoadsAndRuns) {
  LOOM_REQUIRE_XLA();
  const auto& client = backends::xla::xla_client();
  std::string bytes = client.compile(kXlaMulAddSum)->serialize();
  ASSERT_FALSE(bytes.empty());
  auto exe = client.deserialize(bytes);
  EXPECT_EQ(exe->output_types().size(), 2u);
  ops::TensorType t{{2, 3}, DType::f32};
  auto a = client.from_host(kXlaA.data(), t, 0);
  auto b = client.from_host(kXlaB.data(), t, 0);
  auto outs = exe->execute({a->get(), b->get()}, client.device(0));
  std::vector<float> got(6);
  client.to_host(*outs[0], got.data());
  EXPECT_EQ(got, xla_expected_mul_add());
  EXPECT_NE(error_of([&] {
              client.deserialize("not an executable");
            }).find("[xla] PJRT_Executable_DeserializeAndLoad: "),
            std::string::npos);
}

TEST(XlaPjrt, RefusesAnotherApiMajorVersionInOneLine) {
  std::string e = error_of([] { backends::xla::PjrtPlugin::load(LOOM_FAKE_PJRT_V1); });
  EXPECT_NE(e.find("has PJRT C API 1.0; loom was built for 0."), std::string::npos) << e;
  EXPECT_NE(e.find("major versions must match"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  e = error_of([] { backends::xla::PjrtPlugin::load(LOOM_FAKE_PJRT_OLD); });
  EXPECT_NE(e.find("has PJRT C API 0.1, older than the functions loom calls"), std::string::npos)
      << e;
  // loom's own version, every function pointer null: refused at load, naming
  // the file and the entries (before: a segfault at the first call).
  const std::string null_plugin =
      (std::filesystem::path(LOOM_FAKE_PJRT_V1).parent_path() / "libloom_fake_pjrt_null.so")
          .string();
  e = error_of([&] { backends::xla::PjrtPlugin::load(null_plugin); });
  EXPECT_NE(e.find("[xla] plugin " + null_plugin +
                   ": its PJRT_Api table has null entries that loom calls: PJRT_Error_Destroy, "
                   "PJRT_Error_Message, PJRT_Plugin_Initialize"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("PJRT_Client_Compile"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  e = error_of([] { backends::xla::PjrtPlugin::load("/nonexistent/plugin.so"); });
  EXPECT_NE(e.find("[xla] cannot load PJRT plugin /nonexistent/plugin.so: "), std::string::npos)
      << e;
}
#endif  // LOOM_WITH_PJRT

// ---- plugin discovery (no plugin needed) ----

TEST(XlaPluginDiscovery, ExplicitPathMustExist) {
  ScopedEnv env("LOOM_PJRT_PLUGIN", "/nonexistent/pjrt.so");
  std::string e = error_of([] { backends::xla::find_pjrt_plugin(); });
  EXPECT_NE(e.find("[xla] LOOM_PJRT_PLUGIN /nonexistent/pjrt.so: no such file"), std::string::npos)
      << e;
  backends::xla::set_pjrt_plugin_path("/nonexistent/flag.so");
  e = error_of([] { backends::xla::find_pjrt_plugin(); });
  backends::xla::set_pjrt_plugin_path("");
  EXPECT_NE(e.find("[xla] --xla_plugin /nonexistent/flag.so: no such file"), std::string::npos)
      << e;
}

TEST(XlaPluginDiscovery, MissingPluginNamesItsPipPackage) {
  ScopedEnv no_path("LOOM_PJRT_PLUGIN", "");
  ScopedEnv no_tpu_path("TPU_LIBRARY_PATH", "");
  ScopedEnv tpu("PJRT_DEVICE", "TPU");
  std::string e = error_of([] { backends::xla::find_pjrt_plugin(); });
  if (e == "(no error)") GTEST_SKIP() << "libtpu is installed here";
  EXPECT_NE(e.find("[xla] no PJRT plugin for PJRT_DEVICE=TPU: install it with `pip install "
                   "libtpu`"),
            std::string::npos)
      << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  ScopedEnv bad("PJRT_DEVICE", "abacus");
  e = error_of([] { backends::xla::find_pjrt_plugin(); });
  EXPECT_NE(e.find("PJRT_DEVICE=ABACUS is not one loom knows (CPU, CUDA, ROCM, TPU)"),
            std::string::npos)
      << e;
}

TEST(XlaPluginDiscovery, CpuPluginComesFromTheProjectVenvOrPython) {
  ScopedEnv no_path("LOOM_PJRT_PLUGIN", "");
  ScopedEnv cpu("PJRT_DEVICE", "cpu");
  std::string path;
  std::string e = error_of([&] { path = backends::xla::find_pjrt_plugin(); });
  if (path.empty()) {
    EXPECT_NE(e.find("pip install xla-cpu-pjrt"), std::string::npos) << e;
    LOOM_REQUIRE_XLA();  // skipped here, failed under CI
    return;
  }
  EXPECT_NE(path.find("xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so"), std::string::npos) << path;
}

}  // namespace
}  // namespace loom
