// check_json_depth / parse_json (io/json_parse.h) and the readers that use
// them: a value nested past kJsonMaxDepth (1,000) is refused before any DOM is
// built — nlohmann's recursive DOM would overflow the stack at ~10^5 levels
// (the SIGSEGV of issue 15) — with an error naming the file and the byte.
// Brackets inside strings (escaped quotes included) do not count.
#include <gtest/gtest.h>

#include <string>

#include "common/error_of.h"
#include "io/json_parse.h"
#include "io/text_files.h"
#include "loom/bert_config.h"
#include "loom/gpt2_config.h"

namespace loom::io {
namespace {

using testing::error_of;

std::string nested(size_t depth, const std::string& open = "[", const std::string& close = "]") {
  std::string s;
  for (size_t i = 0; i < depth; ++i) s += open;
  for (size_t i = 0; i < depth; ++i) s += close;
  return s;
}

TEST(JsonDepth, LimitIsExactAndStringsDoNotCount) {
  EXPECT_NO_THROW(check_json_depth(nested(kJsonMaxDepth), "[t]"));
  std::string m = error_of([] { check_json_depth(nested(kJsonMaxDepth + 1), "[t] f.json"); });
  EXPECT_NE(m.find("[t] f.json: JSON nested deeper than 1000 levels (at byte 1000)"),
            std::string::npos)
      << m;
  // 5,000 brackets in a string, an escaped quote before them: depth 1.
  std::string in_string = "{\"k\": \"\\\"" + std::string(5000, '[') + "\"}";
  EXPECT_NO_THROW(check_json_depth(in_string, "[t]"));
  EXPECT_NO_THROW(parse_json(in_string, "[t]"));
  // An escaped backslash ends the escape: the quote after it closes the string.
  std::string after = "[\"\\\\\", " + nested(kJsonMaxDepth) + "]";
  EXPECT_NE(error_of([&] { check_json_depth(after, "[t]"); }).find("deeper"), std::string::npos);
}

TEST(JsonDepth, ParseJsonNamesTheFileForBothFaults) {
  EXPECT_EQ(parse_json("{\"a\": [1, 2]}", "[t]")["a"][1], 2);
  std::string m = error_of([] { parse_json("{\"a\": ", "[t] x.json"); });
  EXPECT_EQ(m.rfind("[t] x.json: not valid JSON (", 0), 0u) << m;
  m = error_of([] { parse_json<nlohmann::ordered_json>(nested(200000), "[t] x.json"); });
  EXPECT_NE(m.find("nested deeper than 1000 levels"), std::string::npos) << m;
}

TEST(JsonDepth, DeepConfigJsonIsAnErrorNotACrash) {
  // The case: a value 200,000 levels deep inside config.json.
  const std::string deep = "{\"model_type\": \"gpt2\", \"x\": " + nested(200000) + "}";
  std::string m = error_of([&] { GPT2Config::from_json_string(deep, "deep/config.json"); });
  EXPECT_NE(m.find("[config] deep/config.json: JSON nested deeper than 1000 levels"),
            std::string::npos)
      << m;
  const std::string bert =
      "{\"model_type\": \"bert\", \"x\": " + nested(200000, "{\"a\":", "}") + "}";
  m = error_of([&] { BertConfig::from_json_string(bert, "b/config.json"); });
  EXPECT_NE(m.find("JSON nested deeper than 1000 levels"), std::string::npos) << m;
}

TEST(JsonDepth, DeepJsonLinesRowNamesTheLine) {
  const std::string text = "{\"text\": \"a\"}\n{\"text\": " + nested(200000) + "}\n";
  std::string m = error_of([&] { parse_json_lines(text, "train.jsonl"); });
  EXPECT_NE(m.find("[jsonl] train.jsonl:2: JSON nested deeper than 1000 levels"), std::string::npos)
      << m;
  m = error_of([&] { parse_json_lines("[" + nested(200000) + "]", "arr.json"); });
  EXPECT_NE(m.find("[jsonl] arr.json: JSON nested deeper"), std::string::npos) << m;
}

}  // namespace
}  // namespace loom::io
