// Fuzz test of the tokenizer file parsers (fixed seed, runs in seconds): mutated
// tokenizer.json, vocab.json, merges.txt and vocab.txt contents (byte flips, deletions,
// insertions, duplicated ranges, truncation, swapped numbers) must either load or throw
// loom::Error; never crash, hang or throw anything else. What loads must then encode and
// decode random text without crashing.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <random>
#include <typeinfo>

#include "data/tokenizer/tokenizer_impl.h"
#include "data/tokenizer_test_util.h"
#include "data/tokenizer/tokenizer_unicode.h"
#include "io/tokenizer_files.h"
#include "io/tokenizer_json.h"
#include "loom/error.h"

namespace loom::test {
namespace {

using nlohmann::json;

// A small but complete byte-level BPE tokenizer.json: 256 byte tokens, some merges, an
// added token, a template post-processor, truncation and padding.
std::string small_bpe_json() {
  json vocab = json::object();
  int next = 0;
  for (int b = 0; b < 256; ++b) {
    std::string tok;
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + next++);
    data::unicode::append_utf8(tok, cp);
    vocab[tok] = b;
  }
  json merges = json::array();
  const char* pairs[][2] = {{"t", "h"}, {"th", "e"},       {"\xC4\xA0", "the"},
                            {"a", "n"}, {"\xC4\xA0", "a"}, {"an", "d"}};
  int id = 256;
  for (const auto& p : pairs) {
    vocab[std::string(p[0]) + p[1]] = id++;
    merges.push_back(json::array({p[0], p[1]}));
  }
  vocab["<|endoftext|>"] = id;
  json j = {
      {"version", "1.0"},
      {"truncation",
       {{"max_length", 16}, {"strategy", "LongestFirst"}, {"stride", 0}, {"direction", "Right"}}},
      {"padding",
       {{"strategy", {{"Fixed", 20}}},
        {"direction", "Left"},
        {"pad_to_multiple_of", nullptr},
        {"pad_id", id},
        {"pad_type_id", 0},
        {"pad_token", "<|endoftext|>"}}},
      {"added_tokens", json::array({{{"id", id},
                                     {"content", "<|endoftext|>"},
                                     {"single_word", false},
                                     {"lstrip", false},
                                     {"rstrip", false},
                                     {"normalized", false},
                                     {"special", true}}})},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "ByteLevel"},
        {"add_prefix_space", true},
        {"trim_offsets", true},
        {"use_regex", true}}},
      {"post_processor",
       {{"type", "RobertaProcessing"},
        {"sep", {"<|endoftext|>", id}},
        {"cls", {"<|endoftext|>", id}},
        {"trim_offsets", true},
        {"add_prefix_space", true}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"vocab", vocab},
        {"merges", merges}}}};
  return j.dump();
}

std::string small_wordpiece_json() {
  json vocab = json::object();
  const char* tokens[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the",   "##s", "a",
                          "##b",   "cat",   ",",     ".",     "\u4e2d", "##ing", "run"};
  for (size_t i = 0; i < std::size(tokens); ++i) vocab[tokens[i]] = i;
  json j = {
      {"added_tokens",
       json::array({{{"id", 2}, {"content", "[CLS]"}, {"normalized", false}, {"special", true}},
                    {{"id", 4},
                     {"content", "[MASK]"},
                     {"lstrip", true},
                     {"normalized", true},
                     {"special", true}}})},
      {"normalizer",
       {{"type", "Sequence"},
        {"normalizers", json::array({{{"type", "BertNormalizer"}}, {{"type", "NFKD"}}})}}},
      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", json::parse(R"([{"SpecialToken":{"id":"[CLS]","type_id":0}},
                                   {"Sequence":{"id":"A","type_id":0}}])")},
        {"pair", json::parse(R"([{"Sequence":{"id":"A","type_id":0}},
                                 {"SpecialToken":{"id":"[SEP]","type_id":1}},
                                 {"Sequence":{"id":"B","type_id":1}}])")},
        {"special_tokens",
         {{"[CLS]", {{"id", "[CLS]"}, {"ids", {2}}, {"tokens", {"[CLS]"}}}},
          {"[SEP]", {{"id", "[SEP]"}, {"ids", {3}}, {"tokens", {"[SEP]"}}}}}}}},
      {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
      {"model",
       {{"type", "WordPiece"},
        {"unk_token", "[UNK]"},
        {"continuing_subword_prefix", "##"},
        {"max_input_chars_per_word", 10},
        {"vocab", vocab}}}};
  return j.dump();
}

std::string mutate(const std::string& base, std::mt19937& rng) {
  std::string s = base;
  static const char* snippets[] = {"-1",      "99999999999999999999",
                                   "1e400",   "null",
                                   "[]",      "{}",
                                   "\"\"",    "\"x\"",
                                   ",",       ":",
                                   "\"",      "\\u0000",
                                   "\\ud800", "true",
                                   "0.5",     "[[[[",
                                   "}}}}",    "\xff",
                                   "\n"};
  for (int n = 1 + rng() % 4; n > 0; --n) {
    if (s.empty()) s = "x";
    size_t pos = rng() % s.size();
    switch (rng() % 7) {
      case 0:
        s[pos] = static_cast<char>(rng() & 0xFF);
        break;
      case 1:
        s.erase(pos, 1 + rng() % 16);
        break;
      case 2:
        s = s.substr(0, pos) + snippets[rng() % std::size(snippets)] + s.substr(pos);
        break;
      case 3: {
        size_t len = std::min<size_t>(1 + rng() % 64, s.size() - pos);
        size_t at = rng() % s.size();
        s = s.substr(0, at) + s.substr(pos, len) + s.substr(at);
        break;
      }
      case 4:
        s.resize(pos);
        break;
      case 5: {  // replace a number with another
        size_t d = s.find_first_of("0123456789", pos);
        if (d != std::string::npos) {
          size_t e = s.find_first_not_of("0123456789", d);
          s.replace(d, e == std::string::npos ? std::string::npos : e - d,
                    std::to_string(static_cast<int64_t>(rng()) - (1LL << 31)));
        }
        break;
      }
      default:
        s[pos] = "{}[],:\" \\"[rng() % 10];
    }
  }
  return s;
}

// Builds and exercises a spec; only loom::Error may escape, and is counted.
void exercise(const std::function<io::TokenizerSpec()>& make, std::mt19937& rng, int& loaded,
              int& rejected) {
  try {
    io::TokenizerSpec spec = make();
    std::shared_ptr<detail::TokenizerImpl> impl = detail::build_tokenizer(spec);
    ++loaded;
    static const char* texts[] = {"the cat, runs.", "<|endoftext|> and the",  "[CLS] [MASK] a",
                                  "\xff\xfe bad",   "\u4e2d\u6587 caf\u00e9", ""};
    for (const char* t : texts) {
      EncodeOptions o = impl->defaults;
      o.return_offsets = rng() % 2 == 0;
      if (o.padding && o.padding->pad_id < 0) o.padding->pad_id = 0;
      try {
        Encoding e = impl->encode(t, nullptr, o, true);
        for (int32_t id : e.ids) ASSERT_TRUE(id >= 0 && id < impl->vocab_size);
        (void)impl->decode(e.ids.data(), e.ids.size(), false);
      } catch (const loom::Error&) {
        // e.g. truncation below the special tokens or a pad id outside the vocabulary
      }
    }
  } catch (const loom::Error& e) {
    ++rejected;
    ASSERT_NE(std::string(e.what()).find("["), std::string::npos);
  } catch (const std::exception& e) {
    FAIL() << "non-loom exception " << typeid(e).name() << ": " << e.what();
  }
}

TEST(TokenizerParserFuzz, TokenizerJson) {
  std::mt19937 rng(1);
  int loaded = 0, rejected = 0;
  for (const std::string& base : {small_bpe_json(), small_wordpiece_json()}) {
    int before = loaded;
    exercise([&] { return io::parse_tokenizer_json(base, "base"); }, rng, loaded, rejected);
    ASSERT_EQ(loaded, before + 1) << "the unmutated file must load";
    for (int i = 0; i < 1500; ++i) {
      std::string text = mutate(base, rng);
      exercise([&] { return io::parse_tokenizer_json(text, "fuzz.json"); }, rng, loaded, rejected);
      if (HasFatalFailure()) return;
    }
  }
  EXPECT_GT(loaded, 100);    // the mutations must not all be rejected...
  EXPECT_GT(rejected, 100);  // ...nor all accepted
}

TEST(TokenizerParserFuzz, Gpt2VocabAndMerges) {
  std::mt19937 rng(2);
  json vocab = json::parse(small_bpe_json())["model"]["vocab"];
  std::string vocab_text = vocab.dump();
  std::string merges_text = "#version: 0.2\nt h\nth e\n\xC4\xA0 the\na n\n\xC4\xA0 a\nan d\n";
  int loaded = 0, rejected = 0;
  for (int i = 0; i < 1500; ++i) {
    bool mutate_vocab = i % 2 == 0;
    std::string v = mutate_vocab ? mutate(vocab_text, rng) : vocab_text;
    std::string m = mutate_vocab ? merges_text : mutate(merges_text, rng);
    exercise(
        [&] {
          return io::gpt2_spec(io::parse_vocab_json(v, "vocab.json"),
                               io::parse_merges_txt(m, "merges.txt"), i % 3 == 0, "fuzz");
        },
        rng, loaded, rejected);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(loaded, 100);
  EXPECT_GT(rejected, 100);
}

TEST(TokenizerParserFuzz, BertVocabTxt) {
  std::mt19937 rng(3);
  std::string vocab_text = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n##s\na\n##b\ncat\n,\n.\nrun\n";
  int loaded = 0, rejected = 0;
  for (int i = 0; i < 1500; ++i) {
    std::string v = mutate(vocab_text, rng);
    io::BertVocabOptions options;
    options.lowercase = i % 2 == 0;
    exercise([&] { return io::bert_spec(io::parse_vocab_txt(v, "vocab.txt"), options, "fuzz"); },
             rng, loaded, rejected);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(loaded, 100);
  EXPECT_GT(rejected, 50);
}

TEST(TokenizerParserFuzz, DeeplyNestedJsonIsRejectedCleanly) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_THROW(io::parse_tokenizer_json(deep, "deep.json"), loom::Error);
  std::string deep_model = "{\"model\": " + std::string(50000, '[') + std::string(50000, ']') + "}";
  EXPECT_THROW(io::parse_tokenizer_json(deep_model, "deep.json"), loom::Error);
  EXPECT_THROW(io::parse_vocab_json(deep, "vocab.json"), loom::Error);
}

}  // namespace
}  // namespace loom::test
