// BPE model options against the `tokenizers` library: tests/fixtures/tokenizers/
// bpe_options.json holds small BPE tokenizers that `tokenizers` trained (or was given)
// with unk_token, fuse_unk, byte_fallback, continuing_subword_prefix, end_of_word_suffix
// and ignore_merges, each with the ids, tokens and character offsets it gives for a set of
// texts (tools/make_tokenizer_fixtures.py). loom loads each tokenizer.json and must give
// the same encodings. The option pairs (fused vs not, merges ignored vs not) differ on
// some text, so an option ignored or inverted fails a case.
#include <gtest/gtest.h>

#include <set>

#include "data/tokenizer_test_util.h"
#include "loom/tokenizer.h"

namespace loom::test {
namespace {

using nlohmann::json;

const json& bpe_fixture() {
  static const json j = load_json(source_path("tests/fixtures/tokenizers/bpe_options.json"));
  return j;
}

const json& bpe_case(const std::string& name) {
  for (const json& c : bpe_fixture()["tokenizers"])
    if (c["name"] == name) return c;
  throw Error("[bpe_options_test] no case '" + name + "'");
}

std::vector<int32_t> option_ids(const json& j) { return j.get<std::vector<int32_t>>(); }

TEST(BpeOptions, MatchTokenizers) {
  const json& cases = bpe_fixture()["tokenizers"];
  ASSERT_GE(cases.size(), 11u);
  for (const json& c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>());
    TempDir dir;
    Tokenizer tok = Tokenizer::from_file(dir.write("tokenizer.json", c["tokenizer"]));
    EncodeOptions options;
    options.add_special_tokens = false;
    options.return_offsets = true;
    for (const json& want : c["cases"]) {
      const std::string text = want["text"];
      SCOPED_TRACE("text '" + text + "'");
      Encoding e = tok.encode(text, options);
      EXPECT_TRUE(same_values(e.ids, option_ids(want["ids"])));
      EXPECT_TRUE(same_values(tok.convert_ids_to_tokens(e.ids),
                              want["tokens"].get<std::vector<std::string>>()));
      EXPECT_TRUE(same_values(to_char_offsets(text, e.offsets),
                              want["offsets"].get<std::vector<std::vector<int64_t>>>()));
    }
  }
}

// Each pair of cases that differ in one option must give different ids on some text;
// otherwise the fixture could not catch that option being ignored.
TEST(BpeOptions, FixturePairsDifferInTheirOption) {
  const std::pair<const char*, const char*> pairs[] = {
      {"unk", "unk_fused"},
      {"unk", "no_unk_token"},
      {"unk", "byte_fallback"},
      {"ignore_merges", "merges_not_ignored"},
      {"continuing_subword_prefix", "continuing_subword_prefix_fused_unk"}};
  for (const auto& [a, b] : pairs) {
    const json &ca = bpe_case(a)["cases"], &cb = bpe_case(b)["cases"];
    ASSERT_EQ(ca.size(), cb.size());
    bool differ = false;
    for (size_t i = 0; i < ca.size(); ++i) differ |= ca[i]["tokens"] != cb[i]["tokens"];
    EXPECT_TRUE(differ) << a << " and " << b << " give the same tokens for every text";
  }
  // The prefix/suffix cases really use their markers.
  auto uses = [](const std::string& name, const std::string& marker) {
    for (const json& t : bpe_case(name)["cases"])
      for (const json& tok : t["tokens"])
        if (tok.get<std::string>().find(marker) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(uses("continuing_subword_prefix", "##"));
  EXPECT_TRUE(uses("end_of_word_suffix", "</w>"));
  EXPECT_TRUE(uses("prefix_and_suffix", "##") && uses("prefix_and_suffix", "</w>"));
  EXPECT_TRUE(uses("byte_fallback", "<0x"));
}

}  // namespace
}  // namespace loom::test
