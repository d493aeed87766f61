// BpeWordCache implementation; see data/bpe_cache.h.
#include "data/tokenizer/bpe_cache.h"

namespace loom::data {

bool BpeWordCache::lookup(std::string_view word, uint32_t base,
                          std::vector<ModelToken>& out) const {
  if (word.size() > kMaxWordBytes) return false;
  size_t h = StringHash{}(word);
  Shard& shard = shards_[h % kShards];
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.map.find(word);
  if (it == shard.map.end()) return false;
  for (const Entry& e : it->second) out.push_back({e.id, base + e.begin, base + e.end});
  return true;
}

void BpeWordCache::insert(std::string_view word, uint32_t base, const std::vector<ModelToken>& out,
                          size_t first) const {
  if (word.size() > kMaxWordBytes) return;
  size_t h = StringHash{}(word);
  Shard& shard = shards_[h % kShards];
  std::vector<Entry> entries;
  entries.reserve(out.size() - first);
  for (size_t k = first; k < out.size(); ++k) {
    entries.push_back({out[k].id, out[k].begin - base, out[k].end - base});
  }
  std::lock_guard<std::mutex> lock(shard.mu);
  if (shard.map.size() >= kCapacity / kShards) return;
  shard.map.emplace(std::string(word), std::move(entries));
}

}  // namespace loom::data
