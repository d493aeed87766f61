// Start-up checks across ranks (check_same_on_all_ranks) and the fault path
// (run_main). A check gathers one 128-bit hash per rank; only on a mismatch
// does it gather the items themselves, so every rank can name the same
// first difference. Assumes every rank calls the check in the same order.
#include <cstring>
#include <iostream>

#include "core/hash.h"
#include "loom/dist.h"
#include "loom/error.h"

namespace loom::dist {
namespace {

std::vector<uint8_t> check_hash_bytes(Hash128 h) {
  std::vector<uint8_t> out(16);
  std::memcpy(out.data(), &h.lo, 8);
  std::memcpy(out.data() + 8, &h.hi, 8);
  return out;
}

// Items joined as <u64 length><bytes>...
std::vector<uint8_t> check_serialize(const std::vector<std::string>& items) {
  std::vector<uint8_t> out;
  for (const std::string& s : items) {
    uint64_t n = s.size();
    out.insert(out.end(), reinterpret_cast<uint8_t*>(&n), reinterpret_cast<uint8_t*>(&n) + 8);
    out.insert(out.end(), s.begin(), s.end());
  }
  return out;
}

std::vector<std::string> check_deserialize(const uint8_t* p, size_t n) {
  std::vector<std::string> items;
  size_t i = 0;
  while (i + 8 <= n) {
    uint64_t len;
    std::memcpy(&len, p + i, 8);
    i += 8;
    if (len > n - i) break;
    items.emplace_back(reinterpret_cast<const char*>(p + i), len);
    i += len;
  }
  return items;
}

// Every rank's items (a mismatch was seen): lengths first, then padded lists.
std::vector<std::vector<std::string>> check_gather_items(ProcessGroup& pg,
                                                         const std::vector<std::string>& items) {
  std::vector<uint8_t> mine = check_serialize(items);
  uint64_t len = mine.size();
  std::vector<uint8_t> len_bytes(8);
  std::memcpy(len_bytes.data(), &len, 8);
  std::vector<uint8_t> lens = pg.all_gather(len_bytes);
  uint64_t longest = 0;
  std::vector<uint64_t> each(pg.world_size());
  for (int r = 0; r < pg.world_size(); ++r) {
    std::memcpy(&each[r], lens.data() + 8 * r, 8);
    longest = std::max(longest, each[r]);
  }
  mine.resize(longest);
  std::vector<uint8_t> all = pg.all_gather(mine);
  std::vector<std::vector<std::string>> out;
  for (int r = 0; r < pg.world_size(); ++r)
    out.push_back(check_deserialize(all.data() + longest * r, each[r]));
  return out;
}

std::string check_difference(std::string_view what, const std::vector<std::string>& ref,
                             const std::vector<std::string>& other, int rank) {
  std::string head =
      "[dist] " + std::string(what) + " differ between ranks: rank " + std::to_string(rank);
  for (size_t i = 0; i < std::min(ref.size(), other.size()); ++i)
    if (ref[i] != other[i])
      return head + " has '" + other[i] + "' at item " + std::to_string(i) + ", rank 0 has '" +
             ref[i] + "'";
  return head + " has " + std::to_string(other.size()) + " items, rank 0 has " +
         std::to_string(ref.size());
}

}  // namespace

void check_same_on_all_ranks(std::string_view what, const std::vector<std::string>& items) {
  ProcessGroup& pg = default_process_group();
  Hash128 h;
  for (const std::string& s : items) h = hash_string(h, s);
  h = hash_combine(h, static_cast<uint64_t>(items.size()));
  std::vector<uint8_t> hashes = pg.all_gather(check_hash_bytes(h));
  int differing = -1;
  for (int r = 1; r < pg.world_size() && differing < 0; ++r)
    if (std::memcmp(hashes.data(), hashes.data() + 16 * r, 16) != 0) differing = r;
  if (differing < 0) return;
  std::vector<std::vector<std::string>> all = check_gather_items(pg, items);
  fail(check_difference(what, all[0], all[differing], differing));
}

void check_same_on_all_ranks(std::string_view what, std::string_view bytes) {
  ProcessGroup& pg = default_process_group();
  std::vector<uint8_t> hashes = pg.all_gather(check_hash_bytes(hash_string(Hash128{}, bytes)));
  for (int r = 1; r < pg.world_size(); ++r)
    if (std::memcmp(hashes.data(), hashes.data() + 16 * r, 16) != 0)
      fail("[dist] ", what, " differ between ranks: rank ", r, " differs from rank 0");
}

std::string rank_prefix() {
  ProcessGroup& pg = default_process_group();
  return pg.world_size() > 1 ? "[rank " + std::to_string(pg.rank()) + "] " : "";
}

void run_main(const std::function<void()>& body) {
  // The group is often made inside `body`: its size is read after the throw.
  try {
    body();
    return;
  } catch (const Error& e) {
    if (world_size() == 1) throw;
    std::cerr << "loom: error: " + rank_prefix() + e.what() + "\n" << std::flush;  // one write
  } catch (const std::exception& e) {
    if (world_size() == 1) throw;
    std::cerr << "loom: internal error: " + rank_prefix() + e.what() + "\n" << std::flush;
  }
  default_process_group().abort(1);
}

}  // namespace loom::dist
