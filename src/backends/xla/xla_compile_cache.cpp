// compile_stablehlo (xla_compile_cache.h): PJRT compile behind the on-disk
// executable cache.
#include "backends/xla/xla_compile_cache.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/hash.h"
#include "core/settings.h"
#include "loom/error.h"
#include "loom/metrics.h"

namespace loom::backends::xla {
namespace {

namespace fs = std::filesystem;

// "" without LOOM_CACHE_DIR.
std::string xla_cache_file(const PjrtClient& client, const std::string& mlir) {
  const std::string& dir = settings::text(Setting::cache_dir);
  if (dir.empty()) return "";
  const std::string& plugin = client.plugin().path();
  std::error_code ec;
  uint64_t size = fs::file_size(plugin, ec);
  auto mtime = fs::last_write_time(plugin, ec).time_since_epoch().count();
  // Format 2: the compile options (XNNPACK off on the CPU plugin) and XLA_FLAGS joined the key.
  Hash128 h = hash_string({0x786c61, 2}, mlir);  // "xla", format 2
  h = hash_string(h, plugin);
  h = hash_combine(hash_combine(h, size), static_cast<uint64_t>(mtime));
  h = hash_string(hash_string(h, client.plugin().version()), client.platform_version());
  h = hash_string(h, client.compile_options());
  const char* xla_flags = settings::environment("XLA_FLAGS");  // the plugin's compiler reads them too
  h = hash_string(h, xla_flags ? xla_flags : "");
  return (fs::path(dir) / "xla" / (h.hex() + ".pjrt")).string();
}

std::unique_ptr<PjrtExecutable> xla_cache_load(const PjrtClient& client, const std::string& path) {
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec)) return nullptr;
  try {
    std::ifstream in(path, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    LOOM_CHECK(in.good() || in.eof(), "read failed");
    return client.deserialize(bytes.str());
  } catch (const std::exception& e) {
    std::cerr << "[loom] warning: ignoring xla executable cache file " << path << ": " << e.what()
              << "\n";
    return nullptr;
  }
}

void xla_cache_store(const PjrtExecutable& exe, const std::string& path) {
  try {
    fs::create_directories(fs::path(path).parent_path());
    std::string tmp = path + ".tmp." + std::to_string(::getpid());
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      std::string bytes = exe.serialize();
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      LOOM_CHECK(out.good(), "write failed");
    }
    fs::rename(tmp, path);
  } catch (const std::exception& e) {
    std::cerr << "[loom] warning: cannot write xla executable cache file " << path << ": "
              << e.what() << "\n";
  }
}

}  // namespace

std::unique_ptr<PjrtExecutable> compile_stablehlo(const PjrtClient& client,
                                                  const std::string& mlir) {
  std::string path = xla_cache_file(client, mlir);
  if (auto hit = xla_cache_load(client, path)) {
    metrics::add_counter("XlaPersistentCacheHit");
    return hit;
  }
  if (!path.empty()) metrics::add_counter("XlaPersistentCacheMiss");
  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<PjrtExecutable> exe = client.compile(mlir);
  metrics::add_time("XlaCompileTime", std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now() - t0)
                                          .count());
  metrics::add_counter("XlaCompile");
  if (!path.empty()) xla_cache_store(*exe, path);
  return exe;
}

}  // namespace loom::backends::xla
