// Chat turns for `loom generate --chat` (src/data/sft/chat_turns.h): the
// end-of-turn token read from every shipped chat template (../shared/data/
// chat_templates, as their authors publish them) is the one each model family
// closes a reply with, and the one-turn messages render as the template
// engine renders the same conversation written out by hand.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/shared_data.h"
#include "data/sft/chat_turns.h"
#include "loom/chat_template.h"

namespace loom {
namespace sft_chat_turns_test {

TEST(ChatTurns, EndOfTurnOfEveryShippedTemplate) {
  if (!testing::require_shared("chat_templates/Qwen-Qwen3-0.6B.jinja")) GTEST_SKIP();
  const std::map<std::string, std::string> want = {
      {"Qwen-Qwen2.5-7B-Instruct", "<|im_end|>"},
      {"Qwen-Qwen3-0.6B", "<|im_end|>"},
      {"HuggingFaceTB-SmolLM3-3B", "<|im_end|>"},
      {"meta-llama-Llama-3.2-3B-Instruct", "<|eot_id|>"},
      {"google-gemma-2-2b-it", "<end_of_turn>"},
      {"microsoft-Phi-3.5-mini-instruct", "<|end|>"},
      {"mistralai-Mistral-Nemo-Instruct-2407", "</s>"}};
  for (const auto& [name, eot] : want) {
    SCOPED_TRACE(name);
    ChatTemplate t =
        ChatTemplate::from_file(testing::shared_data_dir() + "/chat_templates/" + name + ".jinja");
    // The special tokens from_pretrained would read from tokenizer_config.json.
    EXPECT_EQ(data::end_of_turn_text(t, R"({"bos_token": "<s>", "eos_token": "</s>"})"), eot);
  }
}

TEST(ChatTurns, OneUserTurnAfterASystemTurnRendersAsWrittenOut) {
  if (!testing::require_shared("chat_templates/Qwen-Qwen2.5-7B-Instruct.jinja")) GTEST_SKIP();
  ChatTemplate t = ChatTemplate::from_file(testing::shared_data_dir() +
                                           "/chat_templates/Qwen-Qwen2.5-7B-Instruct.jinja");
  ChatInput in;
  in.messages_json = data::chat_messages_json("What is 2+2?", "Be \"brief\".");
  in.add_generation_prompt = true;
  EXPECT_EQ(t.apply(in).text,
            "<|im_start|>system\nBe \"brief\".<|im_end|>\n<|im_start|>user\nWhat is "
            "2+2?<|im_end|>\n<|im_start|>assistant\n");
  in.messages_json = data::chat_messages_json("Hi", "");
  // No system message: Qwen2.5's template adds its default one.
  EXPECT_EQ(t.apply(in).text,
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
            "assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

}  // namespace sft_chat_turns_test
}  // namespace loom
