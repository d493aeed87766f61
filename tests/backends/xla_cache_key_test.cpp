// The key of the xla backend's on-disk executables (backends/xla/xla_compile_cache.h,
// key format 4): each part it covers gives another key when it differs — the
// platform ("cpu" against "cuda": a CUDA run never finds a CPU executable),
// the devices' kind (an H100's executable is not an A100's), the plugin build
// and API version, the compile options, XLA_FLAGS, the module — and the
// cache file a run writes is named by exactly that key of the client's
// parts, which name its platform and device kind (issue 40, deliverable 7).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "backends/xla/xla_compile_cache.h"
#include "backends/xla/xla_runtime.h"
#include "backends/xla_test_util.h"
#include "common/scoped_env.h"
#include "common/temp_dir.h"
#include "lazy/lazy_test_util.h"
#include "loom/lazy.h"
#include "loom/metrics.h"
#include "loom/ops.h"
#include "loom/tensor.h"
#include "loom/xla_plugin.h"

namespace loom::backends::xla {
namespace {

namespace fs = std::filesystem;

XlaCacheKeyParts cpu_parts() {
  XlaCacheKeyParts p;
  p.mlir = "module @main { }";
  p.plugin_path = "/venv/xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so";
  p.plugin_size = 259284552;
  p.plugin_mtime = 1733580000;
  p.api_version = "0.81";
  p.platform_name = "cpu";
  p.platform_version = "cpu";
  p.device_kind = "cpu";
  p.compile_options = std::string("\x1a\x04\x20\x01\x28\x01", 6);
  p.xla_flags = "";
  return p;
}

TEST(XlaCacheKey, EveryPartChangesTheKey) {
  const XlaCacheKeyParts base = cpu_parts();
  EXPECT_EQ(xla_cache_key(base), xla_cache_key(cpu_parts())) << "the key is not deterministic";
  const std::vector<std::pair<const char*, std::function<void(XlaCacheKeyParts&)>>> changes = {
      {"platform cpu -> cuda", [](XlaCacheKeyParts& p) { p.platform_name = "cuda"; }},
      {"device kind", [](XlaCacheKeyParts& p) { p.device_kind = "NVIDIA H100 80GB HBM3"; }},
      {"platform version", [](XlaCacheKeyParts& p) { p.platform_version = "cuda 13000"; }},
      {"api version", [](XlaCacheKeyParts& p) { p.api_version = "0.82"; }},
      {"plugin path", [](XlaCacheKeyParts& p) { p.plugin_path += "x"; }},
      {"plugin size", [](XlaCacheKeyParts& p) { p.plugin_size += 1; }},
      {"plugin mtime", [](XlaCacheKeyParts& p) { p.plugin_mtime += 1; }},
      {"compile options", [](XlaCacheKeyParts& p) { p.compile_options += '\0'; }},
      {"XLA_FLAGS", [](XlaCacheKeyParts& p) { p.xla_flags = "--xla_gpu_autotune_level=0"; }},
      {"module", [](XlaCacheKeyParts& p) { p.mlir += " "; }},
      // The fields are hashed with their lengths: text moved across a boundary differs.
      {"kind/version boundary",
       [](XlaCacheKeyParts& p) {
         p.platform_version = "cpuc";
         p.device_kind = "pu";
       }},
  };
  for (const auto& [what, change] : changes) {
    XlaCacheKeyParts p = cpu_parts();
    change(p);
    EXPECT_NE(xla_cache_key(p).hex(), xla_cache_key(base).hex()) << what << " left the key alone";
  }
}

TEST(XlaCacheKey, TheClientNamesItsPlatformAndDeviceKind) {
  LOOM_REQUIRE_XLA();
  const PjrtClient& client = xla_client();
  XlaCacheKeyParts p = xla_cache_key_parts(client, "m");
  EXPECT_EQ(p.platform_name, client.platform_name());
  EXPECT_EQ(p.platform_name, "cpu");  // the plugin CI has
  EXPECT_EQ(p.device_kind, "cpu");
  EXPECT_EQ(p.device_kind, xla_info().device_kind);
  EXPECT_EQ(p.api_version, xla_info().api_version);
  EXPECT_EQ(p.plugin_path, xla_info().plugin_path);
  EXPECT_EQ(p.plugin_size, fs::file_size(p.plugin_path));
  EXPECT_EQ(p.compile_options, client.compile_options());
}

// The file a run writes is $LOOM_CACHE_DIR/xla/<xla_cache_key(parts)>.pjrt for
// the module it compiled (read back from LOOM_DUMP_IR), so what
// EveryPartChangesTheKey shows holds for the files: with the platform
// "cuda", the key (the file a CUDA run would open) is another.
TEST(XlaCacheKey, TheCacheFileIsNamedByTheClientsKey) {
  LOOM_REQUIRE_XLA();
  testing::TempDir cache, dump;
  testing::ScopedEnv cache_env("LOOM_CACHE_DIR", cache.path());
  testing::ScopedEnv dump_env("LOOM_DUMP_IR", dump.path());
  testing::reset_lazy();
  Device dev("lazy:xla");
  Tensor a = tensor({1, 2, 3, 4, 5, 6}, {2, 3}).to(dev);
  std::vector<float> got = (exp(a) * 2.0).to_vector<float>();
  ASSERT_EQ(got.size(), 6u);
  std::vector<fs::path> modules;
  for (const auto& e : fs::directory_iterator(dump.path()))
    if (e.path().extension() == ".mlir") modules.push_back(e.path());
  ASSERT_FALSE(modules.empty()) << "LOOM_DUMP_IR wrote no .mlir";
  int found = 0;
  for (const fs::path& m : modules) {
    std::ifstream in(m);
    std::stringstream text;
    text << in.rdbuf();
    XlaCacheKeyParts parts = xla_cache_key_parts(xla_client(), text.str());
    if (fs::exists(fs::path(cache.path()) / "xla" / (xla_cache_key(parts).hex() + ".pjrt"))) {
      ++found;
      parts.platform_name = "cuda";
      EXPECT_FALSE(
          fs::exists(fs::path(cache.path()) / "xla" / (xla_cache_key(parts).hex() + ".pjrt")));
    }
  }
  EXPECT_GE(found, 1) << "no cache file is named by the key of a module the run compiled";
}

}  // namespace
}  // namespace loom::backends::xla
