// `{% generation %}` ranges and the assistant mask: a Qwen-style template with generation
// blocks, rendered and tokenized by transformers' apply_chat_template(...,
// return_assistant_tokens_mask=True) with the real Qwen2 tokenizer
// (tests/fixtures/chat_templates/generation.json). loom's text, byte ranges, ids (our
// tokenizer, offsets on) and assistant_token_mask must equal transformers'.
#include <gtest/gtest.h>

#include <string>

#include "data/chat_template_test_util.h"
#include "loom/chat_template.h"
#include "loom/error.h"
#include "loom/tokenizer.h"

namespace loom {
namespace {

using testing_chat::OJson;

TEST(ChatTemplateGeneration, RangesIdsAndMaskMatchTransformers) {
  OJson fixture = testing_chat::load_fixture("generation.json");
  ChatTemplate t(fixture["template"].get<std::string>(), "generation.jinja");
  bool have_tokenizer = testing_chat::require_shared(fixture["tokenizer"].get<std::string>());
  std::optional<Tokenizer> tok;
  if (have_tokenizer) {
    tok = Tokenizer::from_file(testing_chat::shared_data_dir() + "/" +
                               fixture["tokenizer"].get<std::string>());
  }
  for (const OJson& c : fixture["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    ChatInput in;
    in.messages_json = c["messages"].dump();
    ChatRendered r = t.apply(in);
    ASSERT_EQ(r.text, c["expected"].get<std::string>());
    std::vector<ChatRange> want;
    for (const OJson& g : c["generation"])
      want.push_back({g[0].get<int64_t>(), g[1].get<int64_t>()});
    EXPECT_EQ(r.generation, want);
    if (!tok) continue;
    EncodeOptions opts;
    opts.add_special_tokens = false;
    opts.return_offsets = true;
    Encoding e = tok->encode(r.text, opts);
    std::vector<int32_t> ids(e.ids.begin(), e.ids.end());
    EXPECT_EQ(ids, c["ids"].get<std::vector<int32_t>>());
    std::vector<int32_t> mask = assistant_token_mask(e.offsets, r.generation);
    EXPECT_EQ(mask, c["assistant_masks"].get<std::vector<int32_t>>());
    int ones = 0;
    for (int32_t m : mask) ones += m;
    EXPECT_GT(ones, 0);
    EXPECT_LT(ones, static_cast<int>(mask.size()));
  }
  if (!have_tokenizer) GTEST_SKIP() << "no ../shared/data tokenizer: mask part skipped";
}

// The mask rule on hand-made offsets: a token counts when it overlaps a range at all.
TEST(ChatTemplateGeneration, MaskMarksTokensOverlappingARange) {
  std::vector<TokenOffset> offsets = {{0, 3}, {3, 5}, {5, 9}, {9, 10}, {10, 12}, {0, 0}};
  std::vector<ChatRange> ranges = {{4, 9}, {11, 11}};
  EXPECT_EQ(assistant_token_mask(offsets, ranges), (std::vector<int32_t>{0, 1, 1, 0, 1, 0}));
  std::vector<ChatRange> whole = {{0, 12}};
  EXPECT_EQ(assistant_token_mask(offsets, whole), (std::vector<int32_t>{1, 1, 1, 1, 1, 0}));
}

TEST(ChatTemplateGeneration, NestedInBlockSetIsRefused) {
  ChatTemplate t("{% set x %}\n{% generation %}a{% endgeneration %}{% endset %}", "g.jinja");
  EXPECT_THROW(t.render("{}"), Error);
}

}  // namespace
}  // namespace loom
