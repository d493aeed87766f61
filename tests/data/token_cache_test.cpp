// Tests of the streaming token cache (loom/token_cache.h): the blocks read
// from the token file equal the in-memory path (split_text_lines, the
// validation split's round(n * p / 100) head lines, group_texts) for the head
// and the rest, at batch sizes that cut the text into many batches; a second
// call is a hit that encodes nothing; a changed data file is stale and a
// damaged token file (header, ids, length) is corrupt, each rebuilt to the
// right ids; an encode error names the data file and line; a cache folder
// that cannot be made is named; no temporary file is left behind.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/error_of.h"
#include "common/scoped_env.h"
#include "common/temp_dir.h"
#include "io/text_files.h"
#include "loom/error.h"
#include "loom/token_cache.h"

namespace loom::data {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using testing::TempDir;

// Ids of a line: its bytes (so every id is checkable against the text).
struct ByteEncoder {
  int calls = 0;
  int64_t lines = 0;
  EncodeLinesFn fn() {
    return [this](const std::vector<std::string>& batch) {
      ++calls;
      lines += static_cast<int64_t>(batch.size());
      std::vector<std::vector<int32_t>> out;
      for (const std::string& s : batch) {
        LOOM_CHECK(s.find("BAD") == std::string::npos, "[tokenizer] cannot encode 'BAD'");
        out.emplace_back(s.begin(), s.end());
      }
      return out;
    };
  }
};

std::vector<std::vector<int64_t>> byte_ids(const std::vector<std::string>& lines) {
  std::vector<std::vector<int64_t>> out;
  for (const std::string& s : lines) out.emplace_back(s.begin(), s.end());
  return out;
}

std::vector<std::vector<int64_t>> blocks_of(const Dataset& ds) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t i = 0; i < ds.size(); ++i) {
    Example e = ds.get(i);
    EXPECT_EQ(e.labels, e.input_ids) << "block " << i;
    out.push_back(e.input_ids);
  }
  return out;
}

std::vector<std::vector<int64_t>> expected_blocks(const std::vector<std::string>& lines,
                                                  int64_t block) {
  std::vector<std::vector<int64_t>> out;
  for (const Example& e : group_texts(byte_ids(lines), block)) out.push_back(e.input_ids);
  return out;
}

std::string corpus_text() {
  std::string text = "\xEF\xBB\xBF";
  for (int i = 0; i < 57; ++i)
    text += "line " + std::to_string(i) + (i % 5 == 0 ? "\r\n" : i % 7 == 0 ? "\r\n\n" : "\n");
  return text + "last line without a break";
}

bool has_temp_files(const std::string& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().string().find(".tmp.") != std::string::npos) return true;
  return false;
}

TEST(TokenCache, BlocksEqualTheInMemoryPathForTheSplitAndTheRest) {
  TempDir dir;
  const std::string path = dir.write("corpus.txt", corpus_text());
  const std::vector<std::string> lines = io::split_text_lines(corpus_text(), true);
  const int64_t pct = 10;
  const auto held = static_cast<size_t>(std::llround(lines.size() * pct / 100.0));
  ASSERT_GT(held, 0u);
  const std::vector<std::string> head(lines.begin(), lines.begin() + held);
  const std::vector<std::string> rest(lines.begin() + held, lines.end());
  ByteEncoder enc;
  TokenCacheOptions opts{.cache_dir = dir.sub("cache"), .batch_bytes = 13};
  TokenCacheReport r;
  auto tail =
      tokenize_to_cache({.path = path, .skip_percent = pct}, enc.fn(), {"tok", "f"}, opts, &r);
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.rebuilt, "missing");
  EXPECT_EQ(r.lines, static_cast<int64_t>(rest.size()));
  EXPECT_GT(enc.calls, 10);  // many batches
  EXPECT_EQ(blocks_of(TokenBlockDataset(tail, 16, true)), expected_blocks(rest, 16));
  auto first = tokenize_to_cache({.path = path, .skip_percent = pct, .head_only = true}, enc.fn(),
                                 {"tok", "f"}, opts, &r);
  EXPECT_EQ(r.lines, static_cast<int64_t>(held));
  EXPECT_EQ(blocks_of(TokenBlockDataset(first, 8, true)), expected_blocks(head, 8));
  // max_examples keeps the first blocks; without labels (masked LM) none are set.
  TokenBlockDataset two(tail, 16, false, 2);
  ASSERT_EQ(two.size(), 2);
  EXPECT_EQ(two.get(1).input_ids, expected_blocks(rest, 16)[1]);
  EXPECT_TRUE(two.get(1).labels.empty());
  EXPECT_NE(error_of([&] { two.get(2); }).find("index 2 out of range [0, 2)"), std::string::npos);
  EXPECT_FALSE(has_temp_files(opts.cache_dir));
}

TEST(TokenCache, SecondCallIsAHitThatEncodesNothing) {
  TempDir dir;
  const std::string path = dir.write("corpus.txt", corpus_text());
  ByteEncoder enc;
  TokenCacheOptions opts{.cache_dir = dir.sub("cache")};
  TokenCacheReport r;
  auto a = tokenize_to_cache({.path = path}, enc.fn(), {"tok", "f"}, opts, &r);
  const int calls = enc.calls;
  auto b = tokenize_to_cache({.path = path}, enc.fn(), {"tok", "f"}, opts, &r);
  EXPECT_TRUE(r.hit);
  EXPECT_EQ(enc.calls, calls);
  EXPECT_EQ(r.tokens, a->size());
  EXPECT_EQ(blocks_of(TokenBlockDataset(b, 4, true)), blocks_of(TokenBlockDataset(a, 4, true)));
  // Another tokenizer or other flags or another split: another file, built anew.
  for (TokenCacheKey k : {TokenCacheKey{"tok2", "f"}, TokenCacheKey{"tok", "g"}}) {
    tokenize_to_cache({.path = path}, enc.fn(), k, opts, &r);
    EXPECT_FALSE(r.hit) << k.tokenizer << k.flags;
  }
  tokenize_to_cache({.path = path, .keep_linebreaks = false}, enc.fn(), {"tok", "f"}, opts, &r);
  EXPECT_FALSE(r.hit);
  tokenize_to_cache({.path = path}, enc.fn(), {"tok", "f"},
                    {.cache_dir = opts.cache_dir, .overwrite = true}, &r);
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.rebuilt, "overwrite asked");
}

TEST(TokenCache, ChangedDataFileIsStaleAndRebuilt) {
  TempDir dir;
  const std::string path = dir.write("corpus.txt", "abcdefgh\n");
  ByteEncoder enc;
  TokenCacheOptions opts{.cache_dir = dir.sub("cache")};
  TokenCacheReport r;
  tokenize_to_cache({.path = path}, enc.fn(), {"tok", "f"}, opts, &r);
  dir.write("corpus.txt", "ABCDEFGH\n");  // same size; content (and maybe mtime) differ
  auto f = tokenize_to_cache({.path = path}, enc.fn(), {"tok", "f"}, opts, &r);
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.rebuilt.rfind("stale: ", 0), 0u) << r.rebuilt;
  EXPECT_EQ(blocks_of(TokenBlockDataset(f, 9, true)), expected_blocks({"ABCDEFGH\n"}, 9));
}

// Damages the cache file of `path` with `damage`, then checks the next call
// rebuilds it for `why` and gives the right ids again.
void expect_rebuilt_after(const std::function<void(const std::string&)>& damage,
                          const std::string& why) {
  TempDir dir;
  const std::string path = dir.write("corpus.txt", corpus_text());
  ByteEncoder enc;
  TokenCacheOptions opts{.cache_dir = dir.sub("cache")};
  TokenCacheReport r;
  auto good = tokenize_to_cache({.path = path}, enc.fn(), {"tok", "f"}, opts, &r);
  const auto want = blocks_of(TokenBlockDataset(good, 5, true));
  good.reset();
  damage(r.cache_path);
  auto again = tokenize_to_cache({.path = path}, enc.fn(), {"tok", "f"}, opts, &r);
  EXPECT_FALSE(r.hit) << why;
  EXPECT_NE(r.rebuilt.find(why), std::string::npos) << r.rebuilt;
  EXPECT_EQ(blocks_of(TokenBlockDataset(again, 5, true)), want) << why;
}

void flip_token_file_byte(const std::string& file, std::streamoff at) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(at);
  char c = 0;
  f.get(c);
  f.seekp(at);
  f.put(static_cast<char>(c ^ 0x5a));
}

TEST(TokenCache, CorruptFilesAreDetectedAndRebuilt) {
  expect_rebuilt_after([](const std::string& f) { flip_token_file_byte(f, 200); },
                       "corrupt: the checksum of its ids does not match");
  expect_rebuilt_after([](const std::string& f) { flip_token_file_byte(f, 40); },
                       "corrupt: the header hash does not match");
  expect_rebuilt_after([](const std::string& f) { flip_token_file_byte(f, 0); },
                       "corrupt: not a loom token");
  expect_rebuilt_after([](const std::string& f) { fs::resize_file(f, fs::file_size(f) - 4); },
                       "corrupt: ");
  expect_rebuilt_after([](const std::string& f) { fs::resize_file(f, 10); },
                       "shorter than the header");
}

TEST(TokenCache, EncodeErrorNamesTheDataFileAndLine) {
  TempDir dir;
  const std::string path = dir.write("bad.txt", "fine\nalso fine\nthis is BAD\nfine\n");
  ByteEncoder enc;
  TokenCacheOptions opts{.cache_dir = dir.sub("cache")};
  std::string msg = error_of([&] { tokenize_to_cache({.path = path}, enc.fn(), {"t", ""}, opts); });
  EXPECT_NE(msg.find("[data] " + path + ":3: [tokenizer] cannot encode 'BAD'"), std::string::npos)
      << msg;
  EXPECT_TRUE(fs::is_empty(opts.cache_dir));  // no temporary file, no token file
}

TEST(TokenCache, UnwritableCacheFolderIsNamed) {
  TempDir dir;
  const std::string path = dir.write("c.txt", "abc\n");
  const std::string blocker = dir.write("file", "x");  // a file where the folder should be
  ByteEncoder enc;
  std::string msg = error_of([&] {
    tokenize_to_cache({.path = path}, enc.fn(), {"t", ""}, {.cache_dir = blocker + "/d"});
  });
  EXPECT_NE(msg.find("[token cache] cannot create the cache folder " + blocker + "/d"),
            std::string::npos)
      << msg;
}

TEST(TokenCache, DefaultFolderFollowsTheEnvironment) {
  {
    testing::ScopedEnv cache("LOOM_DATASETS_CACHE", "/some/where");
    EXPECT_EQ(default_token_cache_dir(), "/some/where");
  }
  testing::ScopedEnv no_cache("LOOM_DATASETS_CACHE", std::nullopt);
  testing::ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
  EXPECT_EQ(default_token_cache_dir(), "/xdg/loom/datasets");
}

TEST(TokenCache, TokenizerFingerprintFollowsItsFiles) {
  TempDir dir;
  dir.write("vocab.json", "{\"a\": 0}");
  dir.write("merges.txt", "#version: 0.2\n");
  const std::string a = tokenizer_fingerprint(dir.path());
  EXPECT_EQ(a.size(), 32u);
  EXPECT_EQ(tokenizer_fingerprint(dir.path()), a);
  dir.write("unrelated.bin", "x");
  EXPECT_EQ(tokenizer_fingerprint(dir.path()), a);
  dir.write("merges.txt", "#version: 0.2\na b\n");
  EXPECT_NE(tokenizer_fingerprint(dir.path()), a);
}

}  // namespace
}  // namespace loom::data
