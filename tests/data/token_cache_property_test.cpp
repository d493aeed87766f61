// The token cache never answers for data it does not match (loom/token_cache.h):
// an edit of the data file that keeps its size and mtime is stale; random
// edits of the data file and random byte damage anywhere in the cache file are
// each a miss and a rebuild to the right ids, never a hit (property tests over
// seeded random cases: a failure prints the seed's case); the temporary files
// of builds that died on this host are removed, those of live processes and
// other hosts kept.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "common/temp_dir.h"
#include "core/stream_hash.h"
#include "core/host_name.h"
#include "loom/token_cache.h"

namespace loom::data::token_cache_property_test {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// Ids of a line: its bytes.
EncodeLinesFn byte_encoder() {
  return [](const std::vector<std::string>& batch) {
    std::vector<std::vector<int32_t>> out;
    for (const std::string& s : batch) out.emplace_back(s.begin(), s.end());
    return out;
  };
}

std::vector<int64_t> all_ids(const std::shared_ptr<const TokenFile>& f) {
  std::vector<int64_t> ids;
  f->read(0, f->size(), ids);
  return ids;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Rewrites `path` with `text`, then puts its old mtime back.
void rewrite_keeping_mtime(const std::string& path, const std::string& text) {
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  const timespec times[2] = {st.st_atim, st.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

std::string random_text(std::mt19937& rng, size_t n) {
  std::string s(n, ' ');
  for (char& c : s) c = "abcdefgh \n"[rng() % 10];
  return s;
}

TEST(TokenCache, AnEditThatKeepsSizeAndMtimeIsStale) {
  TempDir dir;
  const std::string path = dir.write("corpus.txt", "abcdefgh\nsecond line\n");
  TokenCacheOptions opts{.cache_dir = dir.sub("cache")};
  TokenCacheReport r;
  tokenize_to_cache({.path = path}, byte_encoder(), {"tok", "f"}, opts, &r);
  rewrite_keeping_mtime(path, "abcdefgh\nsecond LINE\n");
  ::testing::internal::CaptureStderr();
  auto f = tokenize_to_cache({.path = path}, byte_encoder(), {"tok", "f"}, opts, &r);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.rebuilt, "stale: made from another version of the data file (its contents changed)");
  EXPECT_NE(log.find("[token cache] warning: " + r.cache_path + ": stale: "), std::string::npos)
      << log;
  const std::string text = "abcdefgh\nsecond LINE\n";
  EXPECT_EQ(all_ids(f), std::vector<int64_t>(text.begin(), text.end()));
}

TEST(TokenCache, RandomEditsOfTheDataFileNeverHit) {
  TempDir dir;
  const std::string path = dir.sub("corpus.txt");
  TokenCacheOptions opts{.cache_dir = dir.sub("cache")};
  std::mt19937 rng(20261207);
  std::string text = random_text(rng, 3000);
  std::ofstream(path, std::ios::binary) << text;
  TokenCacheReport r;
  tokenize_to_cache({.path = path}, byte_encoder(), {"tok", "f"}, opts, &r);
  int misses = 0;
  for (int round = 0; round < 40; ++round) {
    const size_t edits = 1 + rng() % 3;
    const size_t first = rng() % (text.size() - edits);
    for (size_t e = 0; e < edits; ++e) {  // distinct bytes, each made different
      char& c = text[first + e];
      c = c == 'x' ? 'y' : 'x';
    }
    rewrite_keeping_mtime(path, text);
    ::testing::internal::CaptureStderr();
    auto f = tokenize_to_cache({.path = path}, byte_encoder(), {"tok", "f"}, opts, &r);
    ::testing::internal::GetCapturedStderr();
    misses += !r.hit;
    ASSERT_FALSE(r.hit) << "round " << round << ": a hit after " << edits << " edit(s)";
    ASSERT_EQ(all_ids(f), std::vector<int64_t>(text.begin(), text.end())) << "round " << round;
  }
  EXPECT_EQ(misses, 40);
  tokenize_to_cache({.path = path}, byte_encoder(), {"tok", "f"}, opts, &r);
  EXPECT_TRUE(r.hit) << "unchanged data: " << r.rebuilt;  // the property is not vacuous
}

TEST(TokenCache, RandomDamageOfTheCacheFileNeverHits) {
  TempDir dir;
  std::mt19937 rng(7);
  const std::string text = random_text(rng, 2000);
  const std::string path = dir.write("corpus.txt", text);
  TokenCacheOptions opts{.cache_dir = dir.sub("cache")};
  TokenCacheReport r;
  tokenize_to_cache({.path = path}, byte_encoder(), {"tok", "f"}, opts, &r);
  const std::string good = read_all(r.cache_path);
  const std::vector<int64_t> want(text.begin(), text.end());
  for (int round = 0; round < 60; ++round) {
    std::string bad = good;
    // Every third round damages the 128-byte header, the others anywhere.
    const size_t at = round % 3 == 0 ? rng() % 128 : rng() % bad.size();
    bad[at] = static_cast<char>(bad[at] ^ (1 + rng() % 255));
    std::ofstream(r.cache_path, std::ios::binary | std::ios::trunc) << bad;
    ::testing::internal::CaptureStderr();
    auto f = tokenize_to_cache({.path = path}, byte_encoder(), {"tok", "f"}, opts, &r);
    ::testing::internal::GetCapturedStderr();
    ASSERT_FALSE(r.hit) << "round " << round << ": byte " << at << " damaged, still a hit";
    ASSERT_EQ(r.rebuilt.rfind("corrupt: ", 0) == 0 || r.rebuilt.rfind("stale: ", 0) == 0, true)
        << r.rebuilt;
    ASSERT_EQ(all_ids(f), want) << "round " << round;
    ASSERT_EQ(read_all(r.cache_path), good) << "the rebuild is the same file";
  }
}

TEST(TokenCache, TemporaryFilesOfDeadBuildsOnThisHostAreRemoved) {
  TempDir dir;
  const std::string path = dir.write("corpus.txt", "some text\n");
  const std::string cache = dir.sub("cache");
  fs::create_directories(cache);
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);  // `child` is a pid that no longer runs
  const std::string base = cache + "/corpus.txt-0123.tokens.tmp.";
  const std::string dead = base + host_name() + "." + std::to_string(child) + ".0";
  const std::string live = base + host_name() + "." + std::to_string(::getpid()) + ".7";
  const std::string other = base + "another-host." + std::to_string(child) + ".0";
  for (const std::string& f : {dead, live, other}) std::ofstream(f) << "partial";
  ::testing::internal::CaptureStderr();
  TokenCacheReport r;
  tokenize_to_cache({.path = path}, byte_encoder(), {"tok", "f"}, {.cache_dir = cache}, &r);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_NE(log.find("[token cache] removed " + dead), std::string::npos) << log;
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(other));
}

TEST(StreamHasher, EqualsHashBytesWhateverThePieces) {
  std::mt19937 rng(3);
  for (size_t n : {0, 1, 7, 8, 9, 63, 64, 1000}) {
    std::string bytes(n, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    const Hash128 want = hash_bytes(Hash128{5, 6}, bytes.data(), n);
    for (int split = 0; split < 5; ++split) {
      StreamHasher h(Hash128{5, 6});
      for (size_t at = 0; at < n;) {
        const size_t piece = std::min<size_t>(n - at, rng() % 13);
        h.update(bytes.data() + at, piece);
        at += piece;
      }
      EXPECT_EQ(h.finish(), want) << n << " bytes, split " << split;
    }
    if (n > 0) {
      bytes[n / 2] ^= 1;
      StreamHasher h(Hash128{5, 6});
      h.update(bytes.data(), n);
      EXPECT_NE(h.finish(), want) << n;
    }
  }
}

}  // namespace
}  // namespace loom::data::token_cache_property_test
