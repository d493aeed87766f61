// parse_flat_yaml (io/flat_yaml.h): the flat YAML of a training config.
// Each construct it reads is checked against what YAML's spec (1.2.2) makes
// of it; each it refuses names its line.
#include "io/flat_yaml.h"

#include <gtest/gtest.h>

#include <string>

#include "common/error_of.h"

namespace loom {
namespace {

nlohmann::ordered_json flat_yaml(const std::string& text) {
  return io::parse_flat_yaml(text, "[config] t.yaml");
}

std::string flat_yaml_error(const std::string& text) {
  return testing::error_of([&] { flat_yaml(text); });
}

TEST(FlatYaml, ReadsScalarsListsQuotesAndComments) {
  nlohmann::ordered_json j = flat_yaml(
      "---\n"
      "# a comment line\n"
      "model_name_or_path: Qwen/Qwen3-0.6B   # trailing comment\n"
      "learning_rate: 1e-4\n"
      "bf16: true\n"
      "run_name: \"a # not a comment\"\n"
      "output_dir: 'it''s'\n"
      "eos_token: \"<|im_end|>\\n\"\n"
      "logging_dir:\n"
      "max_length: ~\n"
      "report_to: [tensorboard, 'none']\n"
      "lora_target_modules:\n"
      "  - q_proj\n"
      "  - v_proj   # the values\n"
      "fsdp:\n"
      "- full_shard\n"
      "empty_list: []\n"
      "url: http://example.com/a#b\n");
  EXPECT_EQ(j.dump(),
            R"({"model_name_or_path":"Qwen/Qwen3-0.6B","learning_rate":"1e-4","bf16":"true",)"
            R"("run_name":"a # not a comment","output_dir":"it's","eos_token":"<|im_end|>\n",)"
            R"("logging_dir":null,"max_length":null,"report_to":["tensorboard","none"],)"
            R"("lora_target_modules":["q_proj","v_proj"],"fsdp":["full_shard"],"empty_list":[],)"
            R"("url":"http://example.com/a#b"})");
}

TEST(FlatYaml, AcceptsCrlfAndAnEmptyFile) {
  EXPECT_EQ(flat_yaml("a: 1\r\nb: x\r\n").dump(), R"({"a":"1","b":"x"})");
  EXPECT_EQ(flat_yaml("").dump(), "{}");
  EXPECT_EQ(flat_yaml("# only a comment\n").dump(), "{}");
}

TEST(FlatYaml, RefusesWhatItDoesNotReadNamingTheLine) {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"a: 1\nmodel:\n  name: x\n", "t.yaml:3: nested mappings are not supported"},
      {"a: b: c\n", "t.yaml:1: nested mappings are not supported"},
      {"a: |\n  text\n", "t.yaml:1: block scalars"},
      {"a: &x 1\n", "t.yaml:1: anchors and aliases"},
      {"a: !!int 1\n", "t.yaml:1: tags (!)"},
      {"a: {b: 1}\n", "t.yaml:1: flow mappings"},
      {"a: [1, [2]]\n", "t.yaml:1: nested lists"},
      {"a: [1, 2\n", "t.yaml:1: a flow list ([...]) does not end on its line"},
      {"a: 1\na: 2\n", "t.yaml:2: 'a' is given twice"},
      {"- x\n", "t.yaml:1: a list item ('- ...') outside a list"},
      {"a: 1\n---\nb: 2\n", "t.yaml:2: several YAML documents"},
      {"just words\n", "t.yaml:1: expected 'name: value', got 'just words'"},
      {"a:\n\t- x\n", "t.yaml:2: a tab in the indentation"},
      {"a: \"open\n", "t.yaml:1: a quoted string does not end on its line"},
      {"a: \"\\x41\"\n", "t.yaml:1: the escape \\x is not supported"},
      {"a b: 1\n", "t.yaml:1: 'a b' is not an argument name"},
  };
  for (const Case& c : cases) {
    std::string e = flat_yaml_error(c.text);
    EXPECT_NE(e.find(std::string("[config] ") + c.error), std::string::npos)
        << c.text << "\ngot: " << e;
  }
}

}  // namespace
}  // namespace loom
