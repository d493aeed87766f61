// One test per Jinja construct (tests/fixtures/chat_templates/constructs.json: each template
// and the text Jinja2 rendered it to in transformers' environment, from
// tools/gen_chat_template_fixtures.py): output of every value type, undefined, if/elif/else,
// loops and loop.*, scoping, set/namespace/macro, whitespace control, trim/lstrip_blocks,
// string methods, slicing, operators, tests, filters, globals, generation ranges. The
// `error_*` constructs, which Jinja refuses, must throw loom::Error naming the template and
// the line given here.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "data/chat_template_test_util.h"
#include "loom/chat_template.h"
#include "loom/error.h"

namespace loom {
namespace {

using testing_chat::OJson;

const OJson& constructs() {
  static const OJson j = testing_chat::load_fixture("constructs.json");
  return j;
}

std::vector<std::string> construct_names() {
  std::vector<std::string> names;
  for (const OJson& c : constructs()["cases"]) names.push_back(c["name"].get<std::string>());
  return names;
}

const OJson& construct(const std::string& name) {
  for (const OJson& c : constructs()["cases"]) {
    if (c["name"] == name) return c;
  }
  throw std::runtime_error("no construct " + name);
}

// The line loom must name for each construct Jinja refuses, and a piece of the message.
const std::map<std::string, std::pair<int, std::string>> kErrors = {
    {"error_raise_exception", {2, "raise_exception: Bad roles!"}},
    {"error_attribute_of_undefined", {3, "'nope' is undefined"}},
    {"error_add_str_int", {1, "unsupported operand type(s) for +: 'str' and 'int'"}},
    {"error_add_undefined", {1, "'nope' is undefined"}},
    {"error_unknown_filter", {2, "unsupported filter 'frobnicate'"}},
    {"error_unknown_tag", {1, "unsupported statement '{% frobnicate %}'"}},
    {"error_unclosed_if", {1, "unexpected end of template"}},
    {"error_list_append_sandbox", {1, "'list object' has no attribute 'append'"}},
    {"error_namespace_underscore", {1, "underscore-prefixed attribute '_x'"}},
    {"error_call_undefined", {1, "'nope' is undefined"}},
};

class ChatTemplateConstruct : public ::testing::TestWithParam<std::string> {};

TEST_P(ChatTemplateConstruct, MatchesJinja) {
  const OJson& c = construct(GetParam());
  const std::string file = "construct_" + GetParam() + ".jinja";
  const std::string source = c["template"].get<std::string>();
  const std::string context = c["context"].dump();
  if (c.contains("error")) {
    auto want = kErrors.find(GetParam());
    ASSERT_NE(want, kErrors.end()) << "no expected line for " << GetParam();
    try {
      ChatTemplate(source, file).render(context, testing_chat::fixed_now());
      FAIL() << "expected loom::Error; Jinja raised " << c["error"];
    } catch (const Error& e) {
      std::string msg = e.what();
      std::string where =
          "[chat_template] " + file + " line " + std::to_string(want->second.first) + ": ";
      EXPECT_EQ(msg.rfind(where, 0), 0u) << msg;
      EXPECT_NE(msg.find(want->second.second), std::string::npos) << msg;
    }
    return;
  }
  ChatRendered r = ChatTemplate(source, file).render(context, testing_chat::fixed_now());
  EXPECT_EQ(r.text, c["expected"].get<std::string>());
  std::vector<ChatRange> ranges;
  for (const OJson& g : c["generation"])
    ranges.push_back({g[0].get<int64_t>(), g[1].get<int64_t>()});
  EXPECT_EQ(r.generation, ranges);
}

INSTANTIATE_TEST_SUITE_P(Jinja, ChatTemplateConstruct, ::testing::ValuesIn(construct_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(ChatTemplateConstructs, FixtureCoversEveryErrorCase) {
  size_t errors = 0;
  for (const OJson& c : constructs()["cases"]) errors += c.contains("error") ? 1 : 0;
  EXPECT_EQ(errors, kErrors.size());
  EXPECT_GE(constructs()["cases"].size(), 60u);
}

}  // namespace
}  // namespace loom
