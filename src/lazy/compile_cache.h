// The compile cache: graph key -> Executable (its program, kernels, memory
// plan and arena). In memory an LRU
// (LOOM_CACHE_SIZE entries, default 1024); on disk, when LOOM_CACHE_DIR is
// set, one text file per key holding the optimized graph, keyed by graph
// hash, loom version, backend and options. A corrupt, truncated or stale
// file is ignored with a warning (and recompiled), never trusted.
#pragma once

#include <list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "backends/executable.h"
#include "core/hash.h"

namespace loom::lazy {

class CompileCache {
 public:
  explicit CompileCache(size_t capacity);
  std::shared_ptr<backends::Executable> get(const Hash128& key);
  void put(const Hash128& key, std::shared_ptr<backends::Executable> executable);
  void clear();
  size_t size() const { return map_.size(); }

 private:
  using Entry = std::pair<Hash128, std::shared_ptr<backends::Executable>>;
  size_t capacity_;
  std::list<Entry> lru_;  // front = most recent
  std::unordered_map<Hash128, std::list<Entry>::iterator, Hash128Hasher> map_;
};

/// Disk cache file for `key` under LOOM_CACHE_DIR ("" when unset).
std::string disk_cache_path(const Hash128& key);
/// The optimized graph stored for `key`, or nullopt (missing, or bad with a
/// warning on stderr). `expected_inputs` guards against stale files.
std::optional<ir::Graph> disk_cache_load(const Hash128& key,
                                         const std::vector<ops::TensorType>& expected_inputs);
/// Writes the optimized graph atomically (temporary file + rename).
void disk_cache_store(const Hash128& key, const ir::Graph& optimized);

}  // namespace loom::lazy
