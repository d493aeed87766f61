// Llama-3-style and Qwen2-style byte-level BPE tokenizer.json files (pre_tokenizer Sequence
// [Split(Regex, Isolated), ByteLevel(use_regex false)], Qwen2's NFC normalizer, Llama-3's
// ignore_merges and BOS template) against the `tokenizers` library: every id, mask, offset
// and decoded string of tests/fixtures/tokenizers/{llama3,qwen2}_cases.json, written by
// tools/make_bytelevel_bpe_fixtures.py; plus the Split behaviors and bad patterns, and the
// pieces of patterns with empty matches (tests/fixtures/tokenizers/split_patterns.json,
// written by tools/make_split_pattern_fixtures.py).
#include <gtest/gtest.h>

#include "common/error_of.h"
#include "data/tokenizer/pre_tokenizer.h"
#include "data/tokenizer_test_util.h"
#include "loom/error.h"
#include "loom/tokenizer.h"

namespace loom::test {
namespace {

using nlohmann::json;

std::string split_fixture_dir(const std::string& name) {
  return source_path("tests/fixtures/tokenizers/" + name);
}

void check_split_cases(const Tokenizer& tok, const json& cases, const std::string& label) {
  for (const char* key : {"special", "plain"}) {
    EncodeOptions opts = tok.default_options();
    opts.add_special_tokens = std::string(key) == "special";
    opts.return_offsets = true;
    for (const json& c : cases) {
      const std::string text = c["text"];
      SCOPED_TRACE(label + " " + key + " text=" + text.substr(0, 60));
      Encoding e = tok.encode(text, opts);
      const json& want = c[key];
      EXPECT_TRUE(same_values(e.ids, ids_of(want["ids"])));
      EXPECT_TRUE(same_values(e.special_tokens_mask, ids_of(want["special_tokens_mask"])));
      EXPECT_TRUE(same_values(to_char_offsets(text, e.offsets),
                              want["offsets"].get<std::vector<std::vector<int64_t>>>()));
      if (opts.add_special_tokens) {
        EXPECT_EQ(tok.decode(e.ids), c["decode"].get<std::string>());
        EXPECT_EQ(tok.decode(e.ids, true), c["decode_skip"].get<std::string>());
      }
    }
  }
}

class ByteLevelSplitFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(ByteLevelSplitFixture, EveryCaseMatchesTokenizers) {
  const json f = load_json(split_fixture_dir(GetParam()) + "_cases.json");
  Tokenizer tok = Tokenizer::from_pretrained(split_fixture_dir(GetParam()));
  EXPECT_EQ(tok.vocab_size(), f["vocab_size"].get<int64_t>());
  check_split_cases(tok, f["cases"], GetParam());
}

TEST_P(ByteLevelSplitFixture, RandomTextsMatch) {
  const json f = load_json(split_fixture_dir(GetParam()) + "_cases.json");
  Tokenizer tok = Tokenizer::from_pretrained(split_fixture_dir(GetParam()));
  const auto texts = f["random"]["texts"].get<std::vector<std::string>>();
  std::vector<Encoding> got = tok.encode_batch(texts, tok.default_options(), 2);
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_TRUE(same_values(got[i].ids, ids_of(f["random"]["ids"][i])))
        << GetParam() << " random text " << i << ": " << texts[i];
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, ByteLevelSplitFixture, ::testing::Values("llama3", "qwen2"));

TEST(ByteLevelSplit, SpecialTokensAreSingleIds) {
  Tokenizer llama = Tokenizer::from_pretrained(split_fixture_dir("llama3"));
  Encoding e = llama.encode("<|begin_of_text|>hi<|eot_id|>");
  ASSERT_GE(e.ids.size(), 3u);
  EXPECT_EQ(llama.id_to_token(e.ids[0]), "<|begin_of_text|>");  // the template's BOS
  EXPECT_EQ(llama.id_to_token(e.ids[1]), "<|begin_of_text|>");  // the text's own
  EXPECT_EQ(llama.id_to_token(e.ids.back()), "<|eot_id|>");
  Tokenizer qwen = Tokenizer::from_pretrained(split_fixture_dir("qwen2"));
  Encoding q = qwen.encode("<|im_start|>user<|im_end|><|endoftext|>");
  ASSERT_GE(q.ids.size(), 4u);
  EXPECT_EQ(qwen.id_to_token(q.ids.front()), "<|im_start|>");
  EXPECT_EQ(qwen.id_to_token(q.ids.back()), "<|endoftext|>");
}

// A tokenizer.json with only a Split pre-tokenizer and a WordPiece vocabulary holding every
// piece whole, so that each piece's boundaries show in the tokens.
std::string split_only_json(const std::string& pattern_kind, const std::string& pattern,
                            const std::string& behavior, bool invert) {
  json vocab = json::object();
  int id = 0;
  for (const char* t : {"a", "b", "-", "a-", "-b", "a-b", "ab", "--", "[UNK]"}) vocab[t] = id++;
  json split = {{"type", "Split"},
                {"pattern", {{pattern_kind, pattern}}},
                {"behavior", behavior},
                {"invert", invert}};
  json j = {{"version", "1.0"},
            {"added_tokens", json::array()},
            {"normalizer", nullptr},
            {"pre_tokenizer", split},
            {"post_processor", nullptr},
            {"decoder", nullptr},
            {"model",
             {{"type", "WordPiece"},
              {"vocab", vocab},
              {"unk_token", "[UNK]"},
              {"continuing_subword_prefix", "##"},
              {"max_input_chars_per_word", 100}}}};
  return j.dump();
}

std::vector<std::string> split_tokens(const std::string& file_json, const std::string& text) {
  TempDir dir;
  Tokenizer tok = Tokenizer::from_file(dir.write("tokenizer.json", file_json));
  std::vector<std::string> out;
  for (int32_t id : tok.encode(text).ids) out.push_back(tok.id_to_token(id).value_or("?"));
  return out;
}

TEST(ByteLevelSplit, BehaviorsMatchTokenizersSemantics) {
  // Expected pieces from tokenizers' split.rs doc table for "a-b" split on "-" (String).
  using V = std::vector<std::string>;
  EXPECT_EQ(split_tokens(split_only_json("String", "-", "Removed", false), "a-b"), (V{"a", "b"}));
  EXPECT_EQ(split_tokens(split_only_json("String", "-", "Isolated", false), "a-b"),
            (V{"a", "-", "b"}));
  EXPECT_EQ(split_tokens(split_only_json("String", "-", "MergedWithPrevious", false), "a-b"),
            (V{"a-", "b"}));
  EXPECT_EQ(split_tokens(split_only_json("String", "-", "MergedWithNext", false), "a-b"),
            (V{"a", "-b"}));
  EXPECT_EQ(split_tokens(split_only_json("Regex", "-+", "Contiguous", false), "a--b"),
            (V{"a", "--", "b"}));
  EXPECT_EQ(split_tokens(split_only_json("String", "-", "Removed", true), "a-b"), (V{"-"}));
}

std::vector<std::vector<int64_t>> split_pieces(const std::string& pattern,
                                               const std::string& behavior, bool invert,
                                               const std::string& text) {
  io::PreTokenizerSpec spec;
  spec.type = "Split";
  spec.pattern = pattern;
  spec.pattern_is_regex = true;
  spec.behavior = behavior;
  spec.invert = invert;
  std::unique_ptr<data::PreTokenizer> split = data::make_split_pre_tokenizer(spec, "test");
  std::vector<data::Piece> in{{0, static_cast<uint32_t>(text.size())}}, out;
  split->split(text, in, out);
  std::vector<std::vector<int64_t>> pieces;
  for (const data::Piece& p : out) pieces.push_back({p.begin, p.end});
  return pieces;
}

TEST(ByteLevelSplit, EmptyMatchesCutAsTokenizers) {
  // Every match is a cut point, an empty one (lookaround, x*, anchors) included.
  const json f = load_json(source_path("tests/fixtures/tokenizers/split_patterns.json"));
  ASSERT_GT(f["cases"].size(), 1000u);
  for (const json& c : f["cases"]) {
    const std::string pattern = c["pattern"], behavior = c["behavior"], text = c["text"];
    const bool invert = c["invert"];
    EXPECT_EQ(split_pieces(pattern, behavior, invert, text),
              c["pieces"].get<std::vector<std::vector<int64_t>>>())
        << "pattern " << pattern << " " << behavior << " invert " << invert << " text '" << text
        << "'";
  }
}

TEST(ByteLevelSplit, EmptyLookaheadMatchCutsLlama3Text) {
  // The Llama-3 fixture with its Split pattern replaced by (?=a): `tokenizers` gives the
  // pieces 'a', 'a' for "aa", so the ids of 'a' twice (not the merged "aa").
  json j = load_json(split_fixture_dir("llama3") + "/tokenizer.json");
  json& split = j["pre_tokenizer"]["pretokenizers"][0];
  ASSERT_EQ(split["type"], "Split");
  split["pattern"] = {{"Regex", "(?=a)"}};
  TempDir dir;
  Tokenizer tok = Tokenizer::from_file(dir.write("tokenizer.json", j.dump()));
  EncodeOptions opts = tok.default_options();
  opts.add_special_tokens = false;
  EXPECT_TRUE(same_values(tok.encode("aa", opts).ids, std::vector<int32_t>{64, 64}));
}

TEST(ByteLevelSplit, LongWhitespaceRunWithinMatchLimit) {
  // 10M spaces and "a" under the Llama-3 pattern: \s*[\r\n]+ backtracks over the whole
  // run, past PCRE2's default match limit; `tokenizers` (Oniguruma) splits it.
  const std::string pattern = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|)"
                              R"( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  const int64_t n = 10'000'000;
  std::string text(n, ' ');
  text += "a";
  EXPECT_EQ(split_pieces(pattern, "Isolated", false, text),
            (std::vector<std::vector<int64_t>>{{0, n - 1}, {n - 1, n + 1}}));
}

TEST(ByteLevelSplit, BadPatternIsAClearError) {
  TempDir dir;
  std::string path =
      dir.write("tokenizer.json", split_only_json("Regex", "(?i:'s", "Isolated", false));
  std::string msg = testing::error_of([&] { Tokenizer::from_file(path); });
  EXPECT_NE(msg.find("Split"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot compile"), std::string::npos) << msg;
  std::string bad = dir.write("bad.json", split_only_json("Regex", "a", "Sideways", false));
  msg = testing::error_of([&] { Tokenizer::from_file(bad); });
  EXPECT_NE(msg.find("Sideways"), std::string::npos) << msg;
}

TEST(ByteLevelSplit, LongBadPatternIsCutAndTheReasonComesFirst) {
  // Issue 25: a 960 kB pattern PCRE2 refuses was echoed whole, the reason after it.
  TempDir dir;
  const std::string pattern = std::string(100000, '(') + "a";
  std::string path =
      dir.write("tokenizer.json", split_only_json("Regex", pattern, "Isolated", false));
  std::string msg = testing::error_of([&] { Tokenizer::from_file(path); });
  EXPECT_LT(msg.size(), 600u) << msg.substr(0, 600);
  // "cannot compile pattern (<PCRE2's reason> at offset N): '((((...'... (100001 bytes)"
  const size_t reason = msg.find("cannot compile pattern (parentheses"), shown = msg.find("'(((");
  ASSERT_NE(reason, std::string::npos) << msg.substr(0, 600);
  ASSERT_NE(shown, std::string::npos) << msg.substr(0, 600);
  EXPECT_LT(reason, shown) << msg;
  EXPECT_NE(msg.find("'... (100001 bytes)"), std::string::npos) << msg;
  // A short pattern is still shown whole.
  path = dir.write("short.json", split_only_json("Regex", "(?i:'s", "Isolated", false));
  msg = testing::error_of([&] { Tokenizer::from_file(path); });
  EXPECT_NE(msg.find(": '(?i:'s'"), std::string::npos) << msg;
}

}  // namespace
}  // namespace loom::test
