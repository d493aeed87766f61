// `loom tokenize` end to end: the binary's output lines equal
// Tokenizer::encode's ids, and the ids the `tokenizers` library wrote into
// tests/fixtures/tokenizers/<name>_cases.json, with and without special
// tokens; a malformed line or a missing file is one error line and exit 1.
// `--chat`: the text, ids and assistant mask of each conversation equal what transformers'
// apply_chat_template gave with the real Qwen2 tokenizer
// (tests/fixtures/chat_templates/generation.json); a template that raises is one error line
// naming the template and its line.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "data/chat_template_test_util.h"
#include "loom/tokenizer.h"

namespace loom {
namespace {

std::string tokenizer_fixture(const std::string& name) {
  return std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/tokenizers/" + name;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> lines;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The first `n` cases of <name>_cases.json.
std::vector<nlohmann::json> fixture_cases(const std::string& name, size_t n) {
  std::ifstream in(tokenizer_fixture(name + "_cases.json"));
  nlohmann::json all = nlohmann::json::parse(in);
  std::vector<nlohmann::json> cases;
  for (const auto& c : all["cases"]) {
    if (cases.size() == n) break;
    cases.push_back(c);
  }
  return cases;
}

class TokenizeCli : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizeCli, LinesEqualEncodeAndTheTokenizersLibrary) {
  if (testing::loom_binary_path().empty()) GTEST_SKIP() << "the loom binary is not built";
  testing::TempDir dir;
  std::vector<nlohmann::json> cases = fixture_cases(GetParam(), 24);
  std::string input;
  for (const auto& c : cases) input += nlohmann::json(c["text"]).dump() + "\n";
  std::string path = dir.write("input.jsonl", input);
  Tokenizer tok = Tokenizer::from_pretrained(tokenizer_fixture(GetParam()));
  for (bool special : {true, false}) {
    std::vector<std::string> args = {"tokenize", "--tokenizer_name", tokenizer_fixture(GetParam()),
                                     "--input_file", path};
    if (!special) args.insert(args.end(), {"--add_special_tokens", "false"});
    testing::CliResult r = testing::run_loom_cli(dir, args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> lines = split_lines(r.out);
    ASSERT_EQ(lines.size(), cases.size());
    EncodeOptions options = tok.default_options();
    options.add_special_tokens = special;
    for (size_t i = 0; i < cases.size(); ++i) {
      std::vector<int64_t> got = nlohmann::json::parse(lines[i]).get<std::vector<int64_t>>();
      std::string text = cases[i]["text"].get<std::string>();
      std::vector<int32_t> ids = tok.encode(text, options).ids;
      EXPECT_EQ(got, std::vector<int64_t>(ids.begin(), ids.end())) << "line " << i;
      auto expected = cases[i][special ? "special" : "plain"]["ids"].get<std::vector<int64_t>>();
      EXPECT_EQ(got, expected) << "line " << i << " vs tokenizers, special " << special;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TokenizeCli, ::testing::Values("gpt2", "bert"));

TEST(TokenizeCliErrors, BadLineAndMissingFileAreOneErrorLine) {
  if (testing::loom_binary_path().empty()) GTEST_SKIP() << "the loom binary is not built";
  testing::TempDir dir;
  std::string path = dir.write("bad.jsonl", "\"fine\"\n{\"not\": \"a string\"}\n");
  testing::CliResult r = testing::run_loom_cli(
      dir, {"tokenize", "--tokenizer_name", tokenizer_fixture("bert"), "--input_file", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("loom: error: ", 0), 0u) << r.err;
  EXPECT_EQ(testing::count_cli_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("line 2"), std::string::npos) << "names the line: " << r.err;
  r = testing::run_loom_cli(dir, {"tokenize", "--tokenizer_name", tokenizer_fixture("bert"),
                                  "--input_file", dir.sub("missing.jsonl")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("loom: error: ", 0), 0u) << r.err;
}

TEST(TokenizeCliChat, TextIdsAndMaskEqualTransformers) {
  if (testing::loom_binary_path().empty()) GTEST_SKIP() << "the loom binary is not built";
  nlohmann::ordered_json fixture = testing_chat::load_fixture("generation.json");
  std::string tok_rel = fixture["tokenizer"].get<std::string>();
  if (!testing_chat::require_shared(tok_rel)) GTEST_SKIP() << "no ../shared/data/" << tok_rel;
  testing::TempDir dir;
  std::string tmpl = dir.write("gen.jinja", fixture["template"].get<std::string>());
  std::string input;
  for (const auto& c : fixture["cases"]) {
    input += nlohmann::ordered_json{{"messages", c["messages"]}}.dump() + "\n";
  }
  std::string path = dir.write("chats.jsonl", input);
  std::string tok_dir = testing_chat::shared_data_dir() + "/" + tok_rel;
  tok_dir = tok_dir.substr(0, tok_dir.rfind('/'));
  testing::CliResult r =
      testing::run_loom_cli(dir, {"tokenize", "--chat", "--tokenizer_name", tok_dir,
                                  "--chat_template_path", tmpl, "--input_file", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = split_lines(r.out);
  ASSERT_EQ(lines.size(), fixture["cases"].size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto& c = fixture["cases"][i];
    nlohmann::json got = nlohmann::json::parse(lines[i]);
    EXPECT_EQ(got["text"], c["expected"]) << "line " << i;
    EXPECT_EQ(got["input_ids"], c["ids"]) << "line " << i;
    EXPECT_EQ(got["assistant_masks"], c["assistant_masks"]) << "line " << i;
  }
}

TEST(TokenizeCliChat, RaisingTemplateIsOneErrorLineNamingIt) {
  if (testing::loom_binary_path().empty()) GTEST_SKIP() << "the loom binary is not built";
  testing::TempDir dir;
  std::string tmpl = dir.write("strict.jinja",
                               "{% for m in messages %}\n{% if m.role == 'system' %}"
                               "{{ raise_exception('no system role') }}{% endif %}{% endfor %}");
  std::string path =
      dir.write("chats.jsonl", R"({"messages": [{"role": "system", "content": "x"}]})"
                               "\n");
  testing::CliResult r = testing::run_loom_cli(
      dir, {"tokenize", "--chat", "--tokenizer_name", tokenizer_fixture("gpt2"),
            "--chat_template_path", tmpl, "--input_file", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("loom: error: ", 0), 0u) << r.err;
  EXPECT_EQ(testing::count_cli_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("strict.jinja line 2: raise_exception: no system role"), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace loom
