// The xla backend's compile of one StableHLO module, through the on-disk
// executable cache: with LOOM_CACHE_DIR set (the lazy device's persistent
// cache, which keeps loom's optimized graphs there), the PJRT executable
// XLA compiled is stored as $LOOM_CACHE_DIR/xla/<key>.pjrt
// (PJRT_Executable_Serialize) and a later process loads it
// (PJRT_Executable_DeserializeAndLoad) instead of compiling. The key hashes
// the module text, the plugin file (path, size, mtime), its API version, its
// platform's name and version and the devices' kind, since a serialized
// executable loads only into the same plugin build and runs only on the
// device it was compiled for (a CUDA process never loads a CPU executable,
// nor an H100's an A100: key format 4), and the serialized compile options
// and XLA_FLAGS, which change the code XLA generates (format 2: since XNNPACK
// is off on the CPU plugin). Format 3: the file holds a header with its key and the checksum
// of the serialized executable; a file whose header, key or checksum does not
// match, or that does not load, is a miss, warned about (one line naming the
// file) and replaced. Metrics: XlaCompile, XlaCompileTime (ns), XlaPersistentCacheHit,
// XlaPersistentCacheMiss.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backends/xla/pjrt_client.h"
#include "core/hash.h"

namespace loom::backends::xla {

/// Everything an on-disk executable's key covers.
struct XlaCacheKeyParts {
  std::string mlir;         // the StableHLO module text
  std::string plugin_path;  // the plugin file, its size and mtime (a rebuilt plugin)
  uint64_t plugin_size = 0;
  uint64_t plugin_mtime = 0;
  std::string api_version;       // "0.81"
  std::string platform_name;     // "cpu", "cuda", "rocm", "tpu"
  std::string platform_version;  // PJRT_Client_PlatformVersion's text
  std::string device_kind;       // "cpu", "NVIDIA H100 80GB HBM3"
  std::string compile_options;   // the serialized CompileOptionsProto
  std::string xla_flags;         // $XLA_FLAGS
};
/// The parts for `mlir` compiled by `client` (its plugin file's size and
/// mtime read now; 0 when it cannot be read).
XlaCacheKeyParts xla_cache_key_parts(const PjrtClient& client, const std::string& mlir);
/// The key of those parts (the cache file is $LOOM_CACHE_DIR/xla/<hex>.pjrt):
/// any part that differs gives another key.
Hash128 xla_cache_key(const XlaCacheKeyParts& parts);

/// `mlir` compiled by `client` (or loaded from the disk cache).
std::unique_ptr<PjrtExecutable> compile_stablehlo(const PjrtClient& client,
                                                  const std::string& mlir);

}  // namespace loom::backends::xla
