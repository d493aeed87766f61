// Fuzz test of the tokenizers (fixed seed, a few thousand inputs, runs in seconds): random
// bytes (mostly invalid UTF-8), random Unicode scalar values from many blocks, random
// mixtures with special tokens and very long runs, with random truncation/padding. Encoding
// must never crash or throw; ids must be in the vocabulary, offsets inside the (repaired)
// text, decode must succeed, and byte-level GPT-2 must round-trip the text exactly.
#include <gtest/gtest.h>

#include <random>

#include "data/tokenizer_test_util.h"
#include "data/tokenizer/tokenizer_unicode.h"
#include "loom/error.h"
#include "loom/tokenizer.h"

namespace loom::test {
namespace {

std::string random_bytes(std::mt19937& rng, size_t max_len) {
  std::string s(rng() % (max_len + 1), '\0');
  for (char& c : s) c = static_cast<char>(rng() & 0xFF);
  return s;
}

// A random scalar value, biased towards interesting blocks.
char32_t random_code_point(std::mt19937& rng) {
  static const std::pair<char32_t, char32_t> ranges[] = {
      {0x00, 0x7F},       {0x80, 0x24F},      {0x300, 0x36F},     {0x370, 0x52F},
      {0x600, 0x6FF},     {0x900, 0x97F},     {0xE00, 0xE7F},     {0x1100, 0x11FF},
      {0x2000, 0x206F},   {0x3000, 0x30FF},   {0x4E00, 0x9FFF},   {0xAC00, 0xD7A3},
      {0xE000, 0xF8FF},   {0xFE00, 0xFFFF},   {0x1F300, 0x1FAFF}, {0x20000, 0x2CEAF},
      {0xE0000, 0xE01EF}, {0x10000, 0x10FFFF}};
  const auto& [lo, hi] = ranges[rng() % std::size(ranges)];
  char32_t cp = lo + rng() % (hi - lo + 1);
  if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
  return cp;
}

std::string random_unicode(std::mt19937& rng, size_t max_chars) {
  std::string s;
  for (size_t n = rng() % (max_chars + 1); n > 0; --n) {
    data::unicode::append_utf8(s, random_code_point(rng));
  }
  return s;
}

std::string random_mixture(std::mt19937& rng) {
  static const char* parts[] = {"<|endoftext|>",
                                "<|endoftext",
                                "[CLS]",
                                "[SEP",
                                "[MASK]",
                                "'s",
                                "'ll",
                                " ",
                                "  ",
                                "\t",
                                "\n",
                                "\r\n",
                                "\u00a0",
                                "don't",
                                "\u4e2d",
                                "e\u0301",
                                "\U0001F468\u200D\U0001F469",
                                "12",
                                "##",
                                "\xC3",
                                "\xFF",
                                "\xF0\x9F"};
  std::string s;
  for (int k = rng() % 25; k > 0; --k) {
    s += (rng() % 3 == 0) ? random_unicode(rng, 3) : std::string(parts[rng() % std::size(parts)]);
  }
  return s;
}

EncodeOptions random_options(std::mt19937& rng) {
  EncodeOptions o;
  o.add_special_tokens = rng() % 2 == 0;
  o.return_offsets = rng() % 4 != 0;
  if (rng() % 3 == 0) {
    TruncationOptions t;
    t.max_length = 3 + rng() % 20;
    t.strategy = rng() % 2 ? TruncationStrategy::kLongestFirst : TruncationStrategy::kOnlyFirst;
    t.direction = rng() % 2 ? Side::kRight : Side::kLeft;
    o.truncation = t;
  }
  if (rng() % 3 == 0) {
    PaddingOptions p;
    p.pad_id = 0;
    p.pad_to_multiple_of = rng() % 9;
    if (rng() % 2) {
      p.strategy = PaddingOptions::Strategy::kFixed;
      p.length = rng() % 40;
    }
    o.padding = p;
  }
  return o;
}

// Invariants of one encoding of `text`.
void check(const Tokenizer& tok, const std::string& text, const Encoding& e,
           const EncodeOptions& o) {
  std::string repaired;
  data::unicode::repair_utf8(text, repaired);
  ASSERT_EQ(e.type_ids.size(), e.ids.size());
  ASSERT_EQ(e.attention_mask.size(), e.ids.size());
  ASSERT_EQ(e.special_tokens_mask.size(), e.ids.size());
  for (int32_t id : e.ids) ASSERT_TRUE(id >= 0 && id < tok.vocab_size()) << id;
  if (o.return_offsets) {
    ASSERT_EQ(e.offsets.size(), e.ids.size());
    for (const TokenOffset& off : e.offsets) {
      ASSERT_LE(off.begin, off.end);
      ASSERT_LE(off.end, static_cast<int64_t>(repaired.size()));
    }
  }
  std::string decoded = tok.decode(e.ids, true);
  EXPECT_TRUE(data::unicode::is_valid_utf8(decoded));
}

void fuzz_one(const Tokenizer& tok, const std::string& text, std::mt19937& rng) {
  EncodeOptions o = random_options(rng);
  try {
    check(tok, text, tok.encode(text, o), o);
    if (rng() % 4 == 0) {
      std::string second = random_mixture(rng);
      Encoding e = tok.encode_pair(text, second, o);
      for (int32_t id : e.ids) ASSERT_TRUE(id >= 0 && id < tok.vocab_size());
    }
  } catch (const loom::Error& e) {
    // Only an impossible truncation (only_first with too short a first text) may fail.
    ASSERT_TRUE(o.truncation.has_value()) << e.what();
    ASSERT_NE(std::string(e.what()).find("truncation"), std::string::npos) << e.what();
  }
}

TEST(TokenizerFuzz, RandomBytes) {
  std::mt19937 rng(20240601);
  for (int i = 0; i < 1500; ++i) {
    std::string text = random_bytes(rng, 64);
    fuzz_one(gpt2(), text, rng);
    fuzz_one(bert(), text, rng);
    if (HasFatalFailure()) return;
  }
}

TEST(TokenizerFuzz, RandomUnicode) {
  std::mt19937 rng(777);
  for (int i = 0; i < 1500; ++i) {
    std::string text = random_unicode(rng, 40);
    fuzz_one(gpt2(), text, rng);
    fuzz_one(bert(), text, rng);
    if (HasFatalFailure()) return;
  }
}

TEST(TokenizerFuzz, RandomMixturesWithSpecialTokens) {
  std::mt19937 rng(99);
  for (int i = 0; i < 1500; ++i) {
    std::string text = random_mixture(rng);
    fuzz_one(gpt2(), text, rng);
    fuzz_one(bert(), text, rng);
    if (HasFatalFailure()) return;
  }
}

TEST(TokenizerFuzz, Gpt2RoundTripsAnyText) {
  std::mt19937 rng(4242);
  EncodeOptions o;
  o.add_special_tokens = false;
  for (int i = 0; i < 1500; ++i) {
    std::string text = i % 3 == 0   ? random_bytes(rng, 48)
                       : i % 3 == 1 ? random_unicode(rng, 30)
                                    : random_mixture(rng);
    std::string repaired;
    data::unicode::repair_utf8(text, repaired);
    ASSERT_EQ(gpt2().decode(gpt2().encode(text, o).ids), repaired) << "case " << i;
  }
}

TEST(TokenizerFuzz, LongRuns) {
  const std::vector<std::string> texts = {std::string(20000, ' '),
                                          std::string(20000, 'a'),
                                          std::string(5000, '\n') + "x",
                                          std::string(3000, '!') + "abc",
                                          std::string(10000, '\xff'),
                                          [] {
                                            std::string s;
                                            for (int i = 0; i < 4000; ++i) s += "\u4e2d\u0301";
                                            return s;
                                          }()};
  for (const std::string& t : texts) {
    for (const Tokenizer* tok : {&gpt2(), &bert()}) {
      EncodeOptions o;
      o.return_offsets = true;
      Encoding e = tok->encode(t, o);
      EXPECT_FALSE(e.ids.empty());
      check(*tok, t, e, o);
    }
  }
  EncodeOptions plain;
  plain.add_special_tokens = false;
  EXPECT_EQ(gpt2().decode(gpt2().encode(std::string(20000, 'a'), plain).ids),
            std::string(20000, 'a'));
}

TEST(TokenizerFuzz, DecodeRandomIds) {
  std::mt19937 rng(5);
  for (int i = 0; i < 1000; ++i) {
    for (const Tokenizer* tok : {&gpt2(), &bert()}) {
      std::vector<int32_t> ids(rng() % 20);
      for (int32_t& id : ids) id = static_cast<int32_t>(rng() % tok->vocab_size());
      std::string text = tok->decode(ids, rng() % 2 == 0);
      ASSERT_TRUE(data::unicode::is_valid_utf8(text));
    }
  }
}

}  // namespace
}  // namespace loom::test
