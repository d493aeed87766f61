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

// Format 3: the file starts with a header naming its key and the checksum of
// the serialized executable after it ("loom-xla-executable 3\nkey <hex>\n
// checksum <hex>\n"), so a damaged file, or a valid one under another key's
// name, is a miss with a warning instead of an executable that runs the wrong
// program (or crashes the plugin). Format 2: the compile options (XNNPACK off on
// the CPU plugin) and XLA_FLAGS joined the key.
constexpr const char* kXlaCacheMagic = "loom-xla-executable 3";

struct XlaCacheFile {
  std::string path;  // "" without LOOM_CACHE_DIR
  Hash128 key;
};

std::string xla_body_checksum(const std::string& bytes) {
  return hash_string({0x786c61, 3}, bytes).hex();
}

XlaCacheFile xla_cache_file(const PjrtClient& client, const std::string& mlir) {
  const std::string& dir = settings::text(Setting::cache_dir);
  if (dir.empty()) return {};
  Hash128 h = xla_cache_key(xla_cache_key_parts(client, mlir));
  return {(fs::path(dir) / "xla" / (h.hex() + ".pjrt")).string(), h};
}

// The serialized executable of a cache file, after its header is checked.
std::string xla_cache_body(const std::string& file, const Hash128& key) {
  std::istringstream in(file);
  std::string magic, key_line, checksum_line;
  std::getline(in, magic);
  std::getline(in, key_line);
  std::getline(in, checksum_line);
  LOOM_CHECK(in.good() && magic == kXlaCacheMagic, "bad header (another format or damaged)");
  LOOM_CHECK(key_line == "key " + key.hex(), "written under another key (", key_line, "), not ",
             key.hex());
  std::string body = file.substr(static_cast<size_t>(in.tellg()));
  LOOM_CHECK(checksum_line == "checksum " + xla_body_checksum(body),
             "its checksum does not match its contents (damaged)");
  return body;
}

std::unique_ptr<PjrtExecutable> xla_cache_load(const PjrtClient& client, const XlaCacheFile& f) {
  std::error_code ec;
  if (f.path.empty() || !fs::exists(f.path, ec)) return nullptr;
  try {
    std::ifstream in(f.path, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    LOOM_CHECK(in.good() || in.eof(), "read failed");
    return client.deserialize(xla_cache_body(bytes.str(), f.key));
  } catch (const std::exception& e) {
    std::cerr << "[loom] warning: ignoring xla executable cache file " << f.path << ": " << e.what()
              << "\n";
    return nullptr;
  }
}

void xla_cache_store(const PjrtExecutable& exe, const XlaCacheFile& f) {
  try {
    fs::create_directories(fs::path(f.path).parent_path());
    std::string tmp = f.path + ".tmp." + std::to_string(::getpid());
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      std::string bytes = exe.serialize();
      out << kXlaCacheMagic << "\nkey " << f.key.hex() << "\nchecksum " << xla_body_checksum(bytes)
          << "\n";
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      LOOM_CHECK(out.good(), "write failed");
    }
    fs::rename(tmp, f.path);
  } catch (const std::exception& e) {
    std::cerr << "[loom] warning: cannot write xla executable cache file " << f.path << ": "
              << e.what() << "\n";
  }
}

}  // namespace

XlaCacheKeyParts xla_cache_key_parts(const PjrtClient& client, const std::string& mlir) {
  XlaCacheKeyParts p;
  p.mlir = mlir;
  p.plugin_path = client.plugin().path();
  std::error_code ec;
  uintmax_t size = fs::file_size(p.plugin_path, ec);
  p.plugin_size = ec ? 0 : static_cast<uint64_t>(size);
  auto mtime = fs::last_write_time(p.plugin_path, ec);
  p.plugin_mtime = ec ? 0 : static_cast<uint64_t>(mtime.time_since_epoch().count());
  p.api_version = client.plugin().version();
  p.platform_name = client.platform_name();
  p.platform_version = client.platform_version();
  p.device_kind = client.device_kind();
  p.compile_options = client.compile_options();
  const char* flags = settings::environment("XLA_FLAGS");  // the plugin's compiler reads them too
  p.xla_flags = flags ? flags : "";
  return p;
}

Hash128 xla_cache_key(const XlaCacheKeyParts& p) {
  Hash128 h = hash_string({0x786c61, 4}, p.mlir);  // "xla", key format 4
  h = hash_string(h, p.plugin_path);
  h = hash_combine(hash_combine(h, p.plugin_size), p.plugin_mtime);
  for (const std::string* s : {&p.api_version, &p.platform_name, &p.platform_version,
                               &p.device_kind, &p.compile_options, &p.xla_flags})
    h = hash_string(h, *s);
  return h;
}

std::unique_ptr<PjrtExecutable> compile_stablehlo(const PjrtClient& client,
                                                  const std::string& mlir) {
  XlaCacheFile file = xla_cache_file(client, mlir);
  if (auto hit = xla_cache_load(client, file)) {
    metrics::add_counter("XlaPersistentCacheHit");
    return hit;
  }
  if (!file.path.empty()) metrics::add_counter("XlaPersistentCacheMiss");
  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<PjrtExecutable> exe = client.compile(mlir);
  metrics::add_time("XlaCompileTime", std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now() - t0)
                                          .count());
  metrics::add_counter("XlaCompile");
  if (!file.path.empty()) xla_cache_store(*exe, file);
  return exe;
}

}  // namespace loom::backends::xla
