// The xla backend's compile of one StableHLO module, through the on-disk
// executable cache: with LOOM_CACHE_DIR set (the lazy device's persistent
// cache, which keeps loom's optimized graphs there), the PJRT executable
// XLA compiled is stored as $LOOM_CACHE_DIR/xla/<key>.pjrt
// (PJRT_Executable_Serialize) and a later process loads it
// (PJRT_Executable_DeserializeAndLoad) instead of compiling. The key hashes
// the module text, the plugin file (path, size, mtime), its API version and
// its platform version, since a serialized executable loads only into the
// same plugin build, and the serialized compile options and XLA_FLAGS, which
// change the code XLA generates (format 2: since XNNPACK is off on the CPU
// plugin). Format 3: the file holds a header with its key and the checksum
// of the serialized executable; a file whose header, key or checksum does not
// match, or that does not load, is a miss, warned about (one line naming the
// file) and replaced. Metrics: XlaCompile, XlaCompileTime (ns), XlaPersistentCacheHit,
// XlaPersistentCacheMiss.
#pragma once

#include <memory>
#include <string>

#include "backends/xla/pjrt_client.h"

namespace loom::backends::xla {

/// `mlir` compiled by `client` (or loaded from the disk cache).
std::unique_ptr<PjrtExecutable> compile_stablehlo(const PjrtClient& client,
                                                  const std::string& mlir);

}  // namespace loom::backends::xla
