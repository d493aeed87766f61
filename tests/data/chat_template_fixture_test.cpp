// Every real template of ../shared/data/chat_templates/ rendered by loom, byte-identical to
// transformers' render_jinja_template (tests/fixtures/chat_templates/<template>.json, from
// tools/gen_chat_template_fixtures.py): multi-turn, system and no system,
// add_generation_prompt true and false, tools, Qwen3 reasoning. A conversation the template
// refuses (raise_exception) must be a loom::Error naming the template, its line and the
// message.
#include <gtest/gtest.h>

#include <string>

#include "data/chat_template_test_util.h"
#include "loom/chat_template.h"
#include "loom/error.h"

namespace loom {
namespace {

using testing_chat::OJson;

class ChatTemplateFixture : public ::testing::TestWithParam<std::string> {};

std::string first_difference(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  size_t from = i < 40 ? 0 : i - 40;
  return "first difference at byte " + std::to_string(i) + "\n want: ..." + want.substr(from, 80) +
         "\n  got: ..." + got.substr(from, 80);
}

TEST_P(ChatTemplateFixture, MatchesTransformers) {
  const std::string stem = GetParam();
  if (!testing_chat::require_shared("chat_templates/" + stem + ".jinja")) {
    GTEST_SKIP() << "no ../shared/data/chat_templates (run beside the shared data)";
  }
  ChatTemplate t = ChatTemplate::from_file(testing_chat::shared_data_dir() + "/chat_templates/" +
                                           stem + ".jinja");
  OJson fixture = testing_chat::load_fixture(stem + ".json");
  ASSERT_GE(fixture["cases"].size(), 20u);
  for (const OJson& c : fixture["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    ChatInput in;
    in.messages_json = c["messages"].dump();
    in.tools_json = c["tools"].is_null() ? "" : c["tools"].dump();
    in.add_generation_prompt = c["add_generation_prompt"].get<bool>();
    in.variables_json = c["variables"].dump();
    in.now = testing_chat::fixed_now();
    if (c.contains("error")) {
      try {
        t.apply(in);
        ADD_FAILURE() << "expected loom::Error: " << c["error"];
      } catch (const Error& e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find("[chat_template] " + stem + ".jinja line "), std::string::npos) << msg;
        EXPECT_NE(msg.find("raise_exception: " + c["error"].get<std::string>()), std::string::npos)
            << msg;
      }
      continue;
    }
    std::string want = c["expected"].get<std::string>();
    std::string got = t.apply(in).text;
    EXPECT_EQ(got, want) << first_difference(want, got);
  }
}

INSTANTIATE_TEST_SUITE_P(Templates, ChatTemplateFixture,
                         ::testing::Values("HuggingFaceTB-SmolLM3-3B", "Qwen-Qwen2.5-7B-Instruct",
                                           "Qwen-Qwen3-0.6B", "google-gemma-2-2b-it",
                                           "meta-llama-Llama-3.2-3B-Instruct",
                                           "microsoft-Phi-3.5-mini-instruct",
                                           "mistralai-Mistral-Nemo-Instruct-2407"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           for (char& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

// from_pretrained: chat_template in tokenizer_config.json, its special tokens as variables.
TEST(ChatTemplateLoad, FromPretrainedReadsConfigTemplateAndSpecialTokens) {
  std::string dir = ::testing::TempDir() + "/loom_chat_pretrained";
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(dir + "/tokenizer_config.json");
    f << R"({"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>",
            "chat_template": "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}{{ eos_token }}"})";
  }
  ChatTemplate t = ChatTemplate::from_pretrained(dir);
  ChatInput in;
  in.messages_json = R"([{"role": "user", "content": "hi"}])";
  EXPECT_EQ(t.apply(in).text, "<s>hi</s>");
  in.variables_json = R"({"eos_token": "<E>"})";
  EXPECT_EQ(t.apply(in).text, "<s>hi<E>");
  {
    std::ofstream f(dir + "/chat_template.jinja");
    f << "J{{ messages | length }}\n";
  }
  EXPECT_EQ(ChatTemplate::from_pretrained(dir).apply(in).text, "J1");
  std::filesystem::remove_all(dir);
  EXPECT_THROW(ChatTemplate::from_pretrained(dir), Error);
}

TEST(ChatTemplateLoad, BadMessagesJsonNamesTheField) {
  ChatTemplate t("{{ messages }}", "m.jinja");
  ChatInput in;
  in.messages_json = R"({"role": "user"})";
  try {
    t.apply(in);
    FAIL() << "expected loom::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("messages: expected a JSON array"), std::string::npos)
        << e.what();
  }
  in.messages_json = "[{";
  EXPECT_THROW(t.apply(in), Error);
}

}  // namespace
}  // namespace loom
