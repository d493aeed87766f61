// Exactness of loom's tokenizers against the `tokenizers` library: every id, type id,
// special-token mask, offset and decoded string in tests/fixtures/tokenizers/*_cases.json
// (written by tools/make_tokenizer_fixtures.py) must match, for GPT-2 and BERT, loaded
// from tokenizer.json and from the older files in assets/, plus pipeline variants (other
// post-processors, normalizers, added tokens, truncation/padding in the file) and
// truncation/padding runs.
#include <gtest/gtest.h>

#include <map>

#include "data/tokenizer_test_util.h"
#include "loom/error.h"
#include "loom/tokenizer.h"

namespace loom::test {
namespace {

using nlohmann::json;

const json& fixture(const std::string& name) {
  static std::map<std::string, json> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    it = cache
             .emplace(name,
                      load_json(source_path("tests/fixtures/tokenizers/" + name + "_cases.json")))
             .first;
  }
  return it->second;
}

std::string fixture_tokenizer_json(const std::string& name) {
  return source_path("tests/fixtures/tokenizers/" + name + "/tokenizer.json");
}

std::string assets_dir(const std::string& name) {
  return source_path(name == "gpt2" ? "assets/tokenizers/gpt2"
                                    : "assets/tokenizers/bert-base-uncased");
}

// Compares one encoding with its fixture record; offsets are converted to characters using
// the text each token came from (texts[sequence id]).
void check_encoding(const Encoding& e, const json& want, const std::vector<std::string>& texts,
                    bool offsets, const std::string& label) {
  SCOPED_TRACE(label);
  EXPECT_TRUE(same_values(e.ids, ids_of(want["ids"])));
  EXPECT_TRUE(same_values(e.type_ids, ids_of(want["type_ids"])));
  EXPECT_TRUE(same_values(e.special_tokens_mask, ids_of(want["special_tokens_mask"])));
  EXPECT_TRUE(same_values(e.attention_mask, ids_of(want["attention_mask"])));
  if (!offsets || !want.contains("offsets")) return;
  ASSERT_EQ(e.offsets.size(), e.ids.size());
  std::vector<int32_t> seq(e.ids.size(), 0);
  if (want.contains("sequence_ids")) seq = ids_of(want["sequence_ids"]);
  ASSERT_EQ(seq.size(), e.offsets.size());
  std::vector<std::vector<int64_t>> got;
  for (size_t i = 0; i < e.offsets.size(); ++i) {
    const std::string& text = texts[seq[i] == 1 ? 1 : 0];
    got.push_back(to_char_offsets(text, {e.offsets[i]})[0]);
  }
  EXPECT_TRUE(same_values(got, want["offsets"].get<std::vector<std::vector<int64_t>>>()));
}

// Checks the single-text and pair cases of a fixture record against `tok`.
void check_cases(const Tokenizer& tok, const json& cases, const json& pairs, bool offsets,
                 bool decode, const std::string& label) {
  for (const char* key : {"special", "plain"}) {
    EncodeOptions opts = tok.default_options();
    opts.add_special_tokens = std::string(key) == "special";
    opts.return_offsets = offsets;
    for (const json& c : cases) {
      const std::string text = c["text"];
      Encoding e = tok.encode(text, opts);
      check_encoding(e, c[key], {text}, offsets, label + " " + key + " text=" + text.substr(0, 60));
      if (decode && opts.add_special_tokens) {
        EXPECT_EQ(tok.decode(e.ids), c["decode"].get<std::string>()) << label << " " << text;
        EXPECT_EQ(tok.decode(e.ids, true), c["decode_skip"].get<std::string>())
            << label << " " << text;
      }
    }
    for (const json& p : pairs) {
      const std::string a = p["a"], b = p["b"];
      Encoding e = tok.encode_pair(a, b, opts);
      check_encoding(e, p[key], {a, b}, offsets, label + " pair " + key + " a=" + a);
    }
  }
}

TruncationOptions truncation_of(const json& t) {
  TruncationOptions out;
  out.max_length = t["max_length"];
  std::string strategy = t.value("strategy", "longest_first");
  out.strategy = strategy == "only_first"    ? TruncationStrategy::kOnlyFirst
                 : strategy == "only_second" ? TruncationStrategy::kOnlySecond
                                             : TruncationStrategy::kLongestFirst;
  out.direction = t.value("direction", "right") == "left" ? Side::kLeft : Side::kRight;
  return out;
}

PaddingOptions padding_of(const json& p, int32_t pad_id) {
  PaddingOptions out;
  out.pad_id = pad_id;
  if (p.contains("length")) {
    out.strategy = PaddingOptions::Strategy::kFixed;
    out.length = p["length"];
  }
  out.pad_to_multiple_of = p.value("pad_to_multiple_of", 0);
  out.direction = p.value("direction", "right") == "left" ? Side::kLeft : Side::kRight;
  out.pad_type_id = p.value("pad_type_id", 0);
  return out;
}

// Truncation and padding runs through encode_batch / encode_pair_batch.
void check_batches(const Tokenizer& tok, const json& batches, int32_t pad_id) {
  for (const json& run : batches) {
    const std::string label = run["name"].get<std::string>() +
                              (run["add_special_tokens"].get<bool>() ? " special" : " plain");
    SCOPED_TRACE(label);
    EncodeOptions opts;
    opts.add_special_tokens = run["add_special_tokens"];
    const json& spec = run.contains("error") ? json() : run;
    if (run.contains("error")) {
      // The only failing run: only_first cannot cut a first sequence that is too short.
      opts.truncation = TruncationOptions{8, TruncationStrategy::kOnlyFirst, Side::kRight};
      std::vector<std::string> firsts = {"m n", "short"};
      std::vector<std::string> seconds = {"a b c d e f g h i j k l",
                                          "The quick brown fox jumps over the lazy dog."};
      EXPECT_THROW(tok.encode_pair_batch(firsts, seconds, opts, 1), loom::Error);
      continue;
    }
    if (!spec["truncation"].is_null()) opts.truncation = truncation_of(spec["truncation"]);
    if (!spec["padding"].is_null()) opts.padding = padding_of(spec["padding"], pad_id);
    std::vector<Encoding> got;
    const json& inputs = spec["inputs"];
    if (inputs[0].is_array()) {
      std::vector<std::string> a, b;
      for (const json& p : inputs) a.push_back(p[0]), b.push_back(p[1]);
      got = tok.encode_pair_batch(a, b, opts, 2);
    } else {
      got = tok.encode_batch(inputs.get<std::vector<std::string>>(), opts, 2);
    }
    ASSERT_EQ(got.size(), spec["ids"].size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(same_values(got[i].ids, ids_of(spec["ids"][i]))) << "item " << i;
      EXPECT_TRUE(same_values(got[i].type_ids, ids_of(spec["type_ids"][i]))) << "item " << i;
      EXPECT_TRUE(same_values(got[i].attention_mask, ids_of(spec["attention_mask"][i])));
      EXPECT_TRUE(same_values(got[i].special_tokens_mask, ids_of(spec["special_tokens_mask"][i])));
    }
  }
}

void check_random(const Tokenizer& tok, const json& random, const std::string& label) {
  const auto texts = random["texts"].get<std::vector<std::string>>();
  std::vector<Encoding> got = tok.encode_batch(texts, tok.default_options(), 2);
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_TRUE(same_values(got[i].ids, ids_of(random["ids"][i])))
        << label << " random text " << i << ": " << texts[i];
  }
}

// Writes the fixture tokenizer.json with some top-level fields replaced and loads it.
Tokenizer load_variant(const std::string& name, const json& replace, const TempDir& dir,
                       bool merges_as_strings = false) {
  json base = load_json(fixture_tokenizer_json(name));
  for (auto it = replace.begin(); it != replace.end(); ++it) base[it.key()] = it.value();
  if (merges_as_strings) {
    json merges = json::array();
    for (const json& m : base["model"]["merges"]) {
      merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
    }
    base["model"]["merges"] = merges;
  }
  return Tokenizer::from_file(dir.write("tokenizer.json", base.dump()));
}

void check_special_roles(const Tokenizer& tok, const json& roles) {
  auto expect_role = [&](const char* role, std::optional<int32_t> got) {
    if (roles[role].is_null()) {
      EXPECT_FALSE(got.has_value()) << role;
    } else {
      ASSERT_TRUE(got.has_value()) << role;
      EXPECT_EQ(tok.id_to_token(*got), roles[role].get<std::string>()) << role;
    }
  };
  expect_role("unk_token", tok.unk_token_id());
  expect_role("bos_token", tok.bos_token_id());
  expect_role("eos_token", tok.eos_token_id());
  expect_role("pad_token", tok.pad_token_id());
  expect_role("cls_token", tok.cls_token_id());
  expect_role("sep_token", tok.sep_token_id());
  expect_role("mask_token", tok.mask_token_id());
}

class TokenizerFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerFixture, TokenizerJsonMatchesEveryCase) {
  const json& f = fixture(GetParam());
  Tokenizer tok = Tokenizer::from_file(fixture_tokenizer_json(GetParam()));
  EXPECT_EQ(tok.vocab_size(), f["vocab_size"].get<int64_t>());
  check_cases(tok, f["cases"], f["pairs"], true, true, GetParam() + " tokenizer.json");
}

TEST_P(TokenizerFixture, OlderFilesMatchEveryCase) {
  const json& f = fixture(GetParam());
  Tokenizer tok = Tokenizer::from_pretrained(assets_dir(GetParam()));
  EXPECT_EQ(tok.vocab_size(), f["vocab_size"].get<int64_t>());
  check_special_roles(tok, f["special_tokens"]);
  check_cases(tok, f["cases"], f["pairs"], true, true, GetParam() + " older files");
  check_random(tok, f["random"], GetParam() + " older files");
}

TEST_P(TokenizerFixture, RandomTextsMatch) {
  const json& f = fixture(GetParam());
  Tokenizer tok = Tokenizer::from_file(fixture_tokenizer_json(GetParam()));
  check_random(tok, f["random"], GetParam());
}

TEST_P(TokenizerFixture, TruncationAndPaddingRunsMatch) {
  const json& f = fixture(GetParam());
  Tokenizer tok = Tokenizer::from_file(fixture_tokenizer_json(GetParam()));
  check_batches(tok, f["batches"], GetParam() == "gpt2" ? 50256 : -1);
}

TEST_P(TokenizerFixture, VariantsMatch) {
  const json& f = fixture(GetParam());
  for (const json& v : f["variants"]) {
    SCOPED_TRACE(v["name"].get<std::string>());
    TempDir dir;
    Tokenizer tok = load_variant(GetParam(), v["replace"], dir);
    check_cases(tok, v["cases"], v["pairs"], true, true, v["name"].get<std::string>());
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, TokenizerFixture, ::testing::Values("gpt2", "bert"));

TEST(TokenizerFixtureGpt2, StringMergesGiveTheSameIds) {
  // The Hugging Face hub's gpt2 tokenizer.json writes merges as "a b" strings and uses a
  // ByteLevel post-processor; ids must not change.
  const json& f = fixture("gpt2");
  const json* variant = nullptr;
  for (const json& v : f["variants"]) {
    if (v["name"] == "bytelevel_postprocessor") variant = &v;
  }
  ASSERT_NE(variant, nullptr);
  TempDir dir;
  Tokenizer tok = load_variant("gpt2", (*variant)["replace"], dir, true);
  check_cases(tok, (*variant)["cases"], (*variant)["pairs"], true, true, "string merges");
  check_random(tok, f["random"], "string merges");
}

TEST(TokenizerFixtureGpt2, FromGpt2FilesEqualsFolderLoad) {
  Tokenizer a = Tokenizer::from_gpt2_files(source_path("assets/tokenizers/gpt2/vocab.json"),
                                           source_path("assets/tokenizers/gpt2/merges.txt"));
  const json& f = fixture("gpt2");
  check_cases(a, f["cases"], f["pairs"], false, true, "from_gpt2_files");
}

TEST(TokenizerFixtureBert, FromBertVocabEqualsFolderLoad) {
  Tokenizer a =
      Tokenizer::from_bert_vocab(source_path("assets/tokenizers/bert-base-uncased/vocab.txt"));
  const json& f = fixture("bert");
  check_cases(a, f["cases"], f["pairs"], false, true, "from_bert_vocab");
}

}  // namespace
}  // namespace loom::test
