// In-memory LRU and the on-disk cache of optimized graphs.
#include "lazy/compile_cache.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/settings.h"
#include "loom/error.h"

namespace loom::lazy {

CompileCache::CompileCache(size_t capacity) : capacity_(capacity ? capacity : 1) {}

std::shared_ptr<backends::Executable> CompileCache::get(const Hash128& key) {
  auto it = map_.find(key);
  if (it == map_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void CompileCache::put(const Hash128& key, std::shared_ptr<backends::Executable> executable) {
  auto it = map_.find(key);
  if (it != map_.end()) {
    it->second->second = std::move(executable);
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.emplace_front(key, std::move(executable));
  map_[key] = lru_.begin();
  while (map_.size() > capacity_) {
    map_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

void CompileCache::clear() {
  lru_.clear();
  map_.clear();
}

namespace {
// 4: a checksum line (the hash of the IR text below the header), checked on
// load, so damage inside the graph (a literal) is a miss, never a hit.
// 3: typed attributes (ops/attrs.def): IR text keys such as fill_value= and
// world_size= instead of scalar= / index= / end=, and graph hashes key each
// non-default attribute by its name. 2: graph hashes key ops by name (1 keyed
// them by their number in ops.def).
constexpr const char* kMagic = "loom-compile-cache 4";

std::string body_checksum(const std::string& body) {
  return hash_string({0x6972, 4}, body).hex();  // "ir", format 4
}
}  // namespace

std::string disk_cache_path(const Hash128& key) {
  const std::string& dir = settings::text(Setting::cache_dir);
  if (dir.empty()) return "";
  return dir + "/" + key.hex() + ".ir";
}

std::optional<ir::Graph> disk_cache_load(const Hash128& key,
                                         const std::vector<ops::TensorType>& expected_inputs) {
  std::string path = disk_cache_path(key);
  if (path.empty() || !std::filesystem::exists(path)) return std::nullopt;
  try {
    std::ifstream in(path);
    std::string magic, version, key_line, checksum_line;
    std::getline(in, magic);
    std::getline(in, version);
    std::getline(in, key_line);
    std::getline(in, checksum_line);
    LOOM_CHECK(magic == kMagic, "bad header");
    LOOM_CHECK(version == std::string("version ") + LOOM_VERSION, "written by another version");
    LOOM_CHECK(key_line == "key " + key.hex(), "key does not match the file name");
    std::stringstream body;
    body << in.rdbuf();
    LOOM_CHECK(checksum_line == "checksum " + body_checksum(body.str()),
               "its checksum does not match its contents (damaged)");
    ir::Graph g = ir::parse(body.str());
    ir::verify(g);
    LOOM_CHECK(g.inputs == expected_inputs, "inputs differ from the traced graph");
    return g;
  } catch (const std::exception& e) {
    std::cerr << "[loom] warning: ignoring compile cache file " << path << ": " << e.what() << "\n";
    return std::nullopt;
  }
}

void disk_cache_store(const Hash128& key, const ir::Graph& optimized) {
  std::string path = disk_cache_path(key);
  if (path.empty()) return;
  try {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::string tmp = path + ".tmp." + std::to_string(::getpid());
    {
      std::ofstream out(tmp, std::ios::trunc);
      const std::string body = ir::to_text(optimized);
      out << kMagic << "\nversion " << LOOM_VERSION << "\nkey " << key.hex() << "\nchecksum "
          << body_checksum(body) << "\n"
          << body;
      LOOM_CHECK(out.good(), "write failed");
    }
    std::filesystem::rename(tmp, path);
  } catch (const std::exception& e) {
    std::cerr << "[loom] warning: cannot write compile cache file " << path << ": " << e.what()
              << "\n";
  }
}

}  // namespace loom::lazy
