// Unit tests of the tokenizer parts and API behaviour: UTF-8 repair (expected strings from
// Python's bytes.decode("utf-8", "replace")), the GPT-2 split pattern (expected pieces from
// tokenizers' ByteLevel.pre_tokenize_str), BPE merge algorithms agreeing, the flat hash
// maps, invalid-UTF-8 input, threads, truncation/padding errors, decode errors, folder
// loading with tokenizer_config.json and tokenize_json_lines.
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "data/tokenizer/bpe.h"
#include "data/tokenizer/bpe_merge_table.h"
#include "data/tokenizer/pre_tokenizer.h"
#include "data/tokenizer/tokenizer_string_map.h"
#include "data/tokenizer_test_util.h"
#include "data/tokenizer/tokenizer_unicode.h"
#include "io/tokenizer_json.h"
#include "loom/error.h"
#include "loom/tokenizer.h"

namespace loom::test {
namespace {

std::string repaired(std::string_view in) {
  std::string out;
  data::unicode::repair_utf8(in, out);
  return out;
}

TEST(TokenizerUnicode, RepairReplacesMaximalInvalidSubparts) {
  EXPECT_EQ(repaired("a\xf0\x9f\x98"
                     "b"),
            "a\xEF\xBF\xBD"
            "b");                                               // truncated 4-byte: one
  EXPECT_EQ(repaired("\xc0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong: two
  EXPECT_EQ(repaired("\xed\xa0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(repaired("\xf4\x90\x80\x80"),
            "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // above U+10FFFF
  EXPECT_EQ(repaired("\xe2\x82"), "\xEF\xBF\xBD");
  EXPECT_EQ(repaired("ok\xe2\x82\xacok"), "ok\xe2\x82\xacok");
  EXPECT_EQ(repaired("\x80"
                     "abc\xc3"),
            "\xEF\xBF\xBD"
            "abc\xEF\xBF\xBD");
  EXPECT_TRUE(data::unicode::is_valid_utf8("plain ascii text, long enough for 8-byte steps"));
  EXPECT_FALSE(data::unicode::is_valid_utf8("0123456789abcdef\xff"));
}

TEST(TokenizerUnicode, CharacterClassesComeFromUtf8proc) {
  namespace uc = data::unicode;
  EXPECT_TRUE(uc::is_letter(U'\u00e9'));
  EXPECT_TRUE(uc::is_number(U'\u0663'));  // ARABIC-INDIC DIGIT THREE (Nd)
  EXPECT_TRUE(uc::is_number(U'\u00bd'));  // VULGAR FRACTION ONE HALF (No)
  EXPECT_TRUE(uc::is_white_space(U'\u3000'));
  EXPECT_TRUE(uc::is_white_space(U'\u0085'));
  EXPECT_FALSE(uc::is_white_space(U'\u200b'));  // ZERO WIDTH SPACE is Cf
  EXPECT_TRUE(uc::is_bert_punctuation(U'$'));   // ASCII symbol counts as punctuation
  EXPECT_TRUE(uc::is_bert_punctuation(U'\u00bf'));
  EXPECT_TRUE(uc::is_bert_control(U'\u00ad'));  // SOFT HYPHEN is Cf
  EXPECT_FALSE(uc::is_bert_control(U'\t'));
  EXPECT_TRUE(uc::is_bert_chinese(U'\u4e2d'));
  EXPECT_FALSE(uc::is_bert_chinese(U'\U0002B820'));  // the `tokenizers` range gap
  char32_t lower[2];
  ASSERT_EQ(uc::to_lower(U'\u0130', lower), 2);
  EXPECT_EQ(lower[0], U'i');
  EXPECT_EQ(lower[1], U'\u0307');
  char32_t d[8];
  ASSERT_EQ(uc::decompose(U'\u00e9', false, d, 8), 2);
  EXPECT_EQ(d[1], U'\u0301');
}

std::vector<std::string> gpt2_split(const std::string& s) {
  std::vector<data::Piece> pieces;
  data::split_gpt2_pattern(s, 0, pieces);
  std::vector<std::string> out;
  for (const data::Piece& p : pieces) out.push_back(s.substr(p.begin, p.end - p.begin));
  return out;
}

TEST(TokenizerPreTokenizer, Gpt2PatternSplitsLikeTheRegex) {
  using V = std::vector<std::string>;
  EXPECT_EQ(gpt2_split("Hello  world's   \n\n x 123abc"),
            (V{"Hello", " ", " world", "'s", "   \n\n", " x", " 123", "abc"}));
  EXPECT_EQ(gpt2_split("!'s  'LL 're\t\tz"),
            (V{"!'", "s", " ", " '", "LL", " '", "re", "\t", "\t", "z"}));
  EXPECT_EQ(gpt2_split(" "), (V{" "}));
  EXPECT_EQ(gpt2_split("a "), (V{"a", " "}));
  EXPECT_EQ(gpt2_split("\u00e9t\u00e9 \u0663\u0664 x\u0301y"),
            (V{"\u00e9t\u00e9", " \u0663\u0664", " x", "\u0301", "y"}));
  EXPECT_TRUE(gpt2_split("").empty());
}

TEST(TokenizerBpe, HeapAndScanMergesAgree) {
  io::TokenizerSpec spec =
      io::read_tokenizer_json(source_path("tests/fixtures/tokenizers/gpt2/tokenizer.json"));
  auto model = data::BpeModel::build(spec.model, "gpt2");
  std::mt19937 rng(7);
  const std::string alphabet = "aaabbeeilnorst ";
  for (int trial = 0; trial < 300; ++trial) {
    size_t n = 2 + rng() % 120;
    std::vector<data::BpeModel::Symbol> a;
    for (size_t i = 0; i < n; ++i) {
      std::string ch(1, alphabet[rng() % alphabet.size()]);
      if (ch == " ") ch = "\xc4\xa0";  // byte-level space
      a.push_back(
          {*model->vocab().find(ch), static_cast<uint32_t>(i), static_cast<uint32_t>(i + 1)});
    }
    std::vector<data::BpeModel::Symbol> b = a;
    model->merge(a, false);
    model->merge(b, true);
    ASSERT_EQ(a.size(), b.size()) << "trial " << trial;
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].id, b[i].id) << "trial " << trial << " symbol " << i;
      ASSERT_EQ(a[i].end, b[i].end);
    }
  }
}

TEST(TokenizerMaps, StringIdMapFindsOverwritesAndGrows) {
  data::StringIdMap m;
  for (int i = 0; i < 5000; ++i) m.insert_or_assign("tok" + std::to_string(i), i);
  m.insert_or_assign("tok17", 99999);
  EXPECT_EQ(m.size(), 5000u);
  EXPECT_EQ(m.find("tok17"), 99999);
  EXPECT_EQ(m.find("tok4999"), 4999);
  EXPECT_EQ(m.find("tok5000"), -1);
  EXPECT_EQ(m.find(""), -1);
  data::BpeMergeTable t;
  t.reserve(3);
  t.insert(1, 2, {0, 10});
  t.insert(2, 1, {1, 11});
  t.insert(1, 2, {5, 12});
  ASSERT_NE(t.find(1, 2), nullptr);
  EXPECT_EQ(t.find(1, 2)->rank, 5);
  EXPECT_EQ(t.find(2, 1)->new_id, 11);
  EXPECT_EQ(t.find(2, 2), nullptr);
}

TEST(TokenizerApi, InvalidUtf8IsReplacedNotRejected) {
  EncodeOptions opts;
  opts.add_special_tokens = false;
  opts.return_offsets = true;
  Encoding bad = gpt2().encode("caf\xc3 ok\xff", opts);
  Encoding fixed = gpt2().encode("caf\xEF\xBF\xBD ok\xEF\xBF\xBD", opts);
  EXPECT_EQ(bad.ids, fixed.ids);
  EXPECT_EQ(bad.offsets, fixed.offsets);  // offsets index the repaired text
  EXPECT_EQ(gpt2().decode(bad.ids), "caf\xEF\xBF\xBD ok\xEF\xBF\xBD");
  Encoding b = bert().encode("x\xfe y", opts);
  EXPECT_EQ(b.ids, bert().encode("x y", opts).ids);  // U+FFFD is removed by clean_text
}

TEST(TokenizerApi, DecodeOfPartialUtf8BytesGivesReplacementCharacter) {
  // "🦀" is three GPT-2 tokens; decoding only the first two leaves an incomplete sequence.
  Encoding e = gpt2().encode("\xF0\x9F\xA6\x80");
  ASSERT_GE(e.ids.size(), 2u);
  std::vector<int32_t> part(e.ids.begin(), e.ids.end() - 1);
  EXPECT_EQ(gpt2().decode(part), "\xEF\xBF\xBD");
  EXPECT_EQ(gpt2().decode(e.ids), "\xF0\x9F\xA6\x80");
}

TEST(TokenizerApi, BatchOnThreadsEqualsSequential) {
  std::mt19937 rng(3);
  std::vector<std::string> texts;
  const char* words[] = {"the", "Quick", " brown", "fox's",         "\u00e9t\u00e9", "\u4e2d\u6587",
                         "123", "!!",    "\n",     "<|endoftext|>", "[SEP]"};
  for (int i = 0; i < 400; ++i) {
    std::string t;
    for (int k = rng() % 30; k > 0; --k) t += std::string(words[rng() % 11]) + " ";
    texts.push_back(t);
  }
  for (const Tokenizer* tok : {&gpt2(), &bert()}) {
    EncodeOptions opts;
    opts.return_offsets = true;
    std::vector<Encoding> one = tok->encode_batch(texts, opts, 1);
    std::vector<Encoding> many = tok->encode_batch(texts, opts, 4);
    ASSERT_EQ(one.size(), many.size());
    for (size_t i = 0; i < one.size(); ++i) {
      EXPECT_EQ(one[i].ids, many[i].ids) << i;
      EXPECT_EQ(one[i].offsets, many[i].offsets) << i;
      EXPECT_EQ(one[i].ids, tok->encode(texts[i], opts).ids) << i;
    }
  }
}

TEST(TokenizerApi, ErrorsInWorkerThreadsReachTheCaller) {
  std::vector<std::string> firsts(100, "a b c d e f g h"), seconds(100, "x");
  firsts[57] = "a";  // too short to lose the 4 tokens only_first must remove
  seconds[57] = "x y z w v u";
  EncodeOptions opts;
  opts.truncation = TruncationOptions{6, TruncationStrategy::kOnlyFirst, Side::kRight};
  EXPECT_THROW(bert().encode_pair_batch(firsts, seconds, opts, 4), loom::Error);
}

TEST(TokenizerApi, PaddingAndTruncationOptions) {
  EncodeOptions opts;
  opts.padding = PaddingOptions{};
  EXPECT_THROW(gpt2().encode("hello", opts), loom::Error);  // GPT-2 has no pad token
  opts.padding->pad_id = 50256;
  opts.padding->pad_to_multiple_of = 8;
  Encoding e = gpt2().encode("hello world", opts);
  EXPECT_EQ(e.ids.size(), 8u);
  EXPECT_EQ(e.ids.back(), 50256);
  EXPECT_EQ(e.attention_mask, (std::vector<int32_t>{1, 1, 0, 0, 0, 0, 0, 0}));
  EncodeOptions t;
  t.truncation = TruncationOptions{1, TruncationStrategy::kLongestFirst, Side::kRight};
  EXPECT_THROW(bert().encode("hello", t), loom::Error);  // 1 < [CLS] + [SEP]
  t.truncation->strategy = TruncationStrategy::kOnlySecond;
  t.truncation->max_length = 5;
  EXPECT_THROW(bert().encode("hello world how are you today", t), loom::Error);  // no pair
  EXPECT_EQ(bert().num_special_tokens_to_add(false), 2);
  EXPECT_EQ(bert().num_special_tokens_to_add(true), 3);
  EXPECT_EQ(gpt2().num_special_tokens_to_add(true), 0);
}

TEST(TokenizerApi, DecodeRejectsUnknownIds) {
  std::vector<int32_t> ids = {15496, 50257};
  EXPECT_THROW(gpt2().decode(ids), loom::Error);
  ids = {-1};
  EXPECT_THROW(bert().decode(ids), loom::Error);
  EXPECT_EQ(gpt2().convert_ids_to_tokens(std::vector<int32_t>{995}),
            std::vector<std::string>{"\xC4\xA0world"});
}

TEST(TokenizerApi, VocabularyQueries) {
  EXPECT_EQ(gpt2().vocab_size(), 50257);
  EXPECT_EQ(gpt2().token_to_id("<|endoftext|>"), 50256);
  EXPECT_EQ(gpt2().eos_token_id(), 50256);
  EXPECT_FALSE(gpt2().pad_token_id().has_value());
  EXPECT_EQ(bert().vocab_size(), 30522);
  EXPECT_EQ(bert().cls_token_id(), 101);
  EXPECT_EQ(bert().mask_token_id(), 103);
  EXPECT_EQ(bert().id_to_token(2088), "world");
  EXPECT_TRUE(bert().is_special_id(102));
  EXPECT_FALSE(bert().is_special_id(2088));
  EXPECT_FALSE(bert().token_to_id("no-such-token").has_value());
}

// WordPiece turns a word longer than max_input_chars_per_word (BERT: 100) into one [UNK];
// a word of exactly 100 characters is still split (tokenizers' WordPiece: `> max`). Ids
// from `tokenizers` 0.23 on tests/fixtures/tokenizers/bert/tokenizer.json.
TEST(TokenizerWordPiece, MaxInputCharsPerWordBoundary) {
  EncodeOptions plain;
  plain.add_special_tokens = false;
  Encoding at_limit = bert().encode(std::string(100, 'a'), plain);
  ASSERT_EQ(at_limit.ids.size(), 50u);
  EXPECT_EQ(at_limit.ids[0], 13360);  // "aaa", then 49 x "##aa"
  EXPECT_EQ(at_limit.ids[1], 11057);
  EXPECT_EQ(bert().encode(std::string(101, 'a'), plain).ids, std::vector<int32_t>{100});
  // Characters, not bytes, after the normalizer ("é" -> "e"): 100 stay a word.
  std::string accented;
  for (int i = 0; i < 100; ++i) accented += "\u00e9";
  Encoding e = bert().encode(accented, plain);
  ASSERT_EQ(e.ids.size(), 50u);
  EXPECT_EQ(e.ids[0], 25212);  // "ee"
  EXPECT_EQ(bert().encode(accented + "\u00e9", plain).ids, std::vector<int32_t>{100});
}

TEST(TokenizerApi, TokenizerConfigChangesBertDefaults) {
  TempDir dir;
  std::ifstream in(source_path("assets/tokenizers/bert-base-uncased/vocab.txt"));
  std::stringstream vocab;
  vocab << in.rdbuf();
  dir.write("vocab.txt", vocab.str());
  dir.write("tokenizer_config.json", R"({"do_lower_case": false, "model_max_length": 512})");
  Tokenizer cased = Tokenizer::from_pretrained(dir.path());
  EncodeOptions opts;
  opts.add_special_tokens = false;
  // Without lowercasing "Hello" is not in the uncased vocabulary.
  EXPECT_EQ(cased.encode("Hello", opts).ids, std::vector<int32_t>{100});
  EXPECT_EQ(bert().encode("Hello", opts).ids, std::vector<int32_t>{7592});
}

TEST(TokenizerApi, TokenizeJsonLines) {
  std::istringstream in("\"Hello world\"\n\n\"<|endoftext|>\"\n\"\"\n");
  std::ostringstream out;
  EncodeOptions opts;
  tokenize_json_lines(gpt2(), in, out, opts, "input.jsonl", 1);
  EXPECT_EQ(out.str(), "[15496,995]\n[50256]\n[]\n");
  std::istringstream bad("\"ok\"\n{\"text\": 1}\n");
  try {
    tokenize_json_lines(gpt2(), bad, out, opts, "input.jsonl", 1);
    FAIL() << "expected loom::Error";
  } catch (const loom::Error& e) {
    EXPECT_NE(std::string(e.what()).find("input.jsonl] line 2"), std::string::npos) << e.what();
  }
}

TEST(TokenizerApi, TokenizeJsonLinesFile) {
  TempDir dir;
  std::string in = dir.write("in.jsonl", "\"Hello world\"\n\"caf\\u00e9\"\n");
  std::string out = dir.path() + "/out.jsonl";
  EncodeOptions opts;
  opts.add_special_tokens = true;
  tokenize_json_lines_file(bert(), in, out, opts);
  std::ifstream result(out);
  std::stringstream s;
  s << result.rdbuf();
  EXPECT_EQ(s.str(), "[101,7592,2088,102]\n[101,7668,102]\n");
  EXPECT_THROW(tokenize_json_lines_file(bert(), dir.path() + "/missing.jsonl", out, opts),
               loom::Error);
}

}  // namespace
}  // namespace loom::test
