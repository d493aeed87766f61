// `loom train --task sft` through the built binary: a tiny random Qwen3 (from
// scratch, the tiny Qwen2-style tokenizer fixture with a ChatML template that
// marks the assistant's tokens) trained on lazy for a few steps on a
// conversational JSONL file: finite losses that fall, the truncation line,
// assistant-only loss, and bad input as one `loom: error:` line. Also
// `loom generate --chat` (the prompt rendered by the Qwen2.5 template of
// ../shared/data, only the reply printed, stopped at <|im_end|>) and
// `--dataset_name` from a fake hub cache.
// Skips when the binary is not built.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "common/scoped_env.h"
#include "common/shared_data.h"
#include "loom/chat_template.h"
#include "loom/tokenizer.h"

namespace loom::testing {
namespace {
namespace fs = std::filesystem;

const std::string kSftFixtures = std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/sft";

class SftCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (loom_binary_path().empty()) GTEST_SKIP() << "the loom binary is not built";
    fs::create_directories(dir_.sub("tok"));
    fs::copy_file(std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/tokenizers/qwen2/tokenizer.json",
                  dir_.sub("tok/tokenizer.json"));
    fs::copy_file(kSftFixtures + "/qwen2_tokenizer_config.json",
                  dir_.sub("tok/tokenizer_config.json"));
    std::string rows;
    const char* qa[][2] = {{"hi there", "hello to you"},
                           {"what is two plus two", "four"},
                           {"name a colour", "blue, or maybe a long green"},
                           {"say yes", "yes"}};
    for (int rep = 0; rep < 4; ++rep)
      for (const auto& p : qa)
        rows += std::string(R"({"messages": [{"role": "user", "content": ")") + p[0] +
                R"("}, {"role": "assistant", "content": ")" + p[1] + R"("}]})" + "\n";
    train_ = dir_.write("train.jsonl", rows);
  }
  std::vector<std::string> flags(const std::string& out) const {
    return {"train",
            "--task",
            "sft",
            "--model_type",
            "qwen3",
            "--config_overrides",
            "num_hidden_layers=1,hidden_size=32,intermediate_size=64,num_attention_heads=4,"
            "num_key_value_heads=2,head_dim=8,max_position_embeddings=64",
            "--tokenizer_name",
            dir_.sub("tok"),
            "--chat_template_path",
            kSftFixtures + "/chatml_generation.jinja",
            "--train_file",
            train_,
            "--max_length",
            "64",
            "--output_dir",
            out,
            "--per_device_train_batch_size",
            "4",
            "--max_steps",
            "8",
            "--learning_rate",
            "0.01",
            "--logging_steps",
            "1",
            "--save_strategy",
            "no",
            "--device",
            "lazy",
            "--disable_tqdm"};
  }
  TempDir dir_;
  std::string train_;
};

// The lazy device's compiles of a run (lazy_metrics.json's UncachedCompile).
int64_t compiles(const std::string& out) {
  nlohmann::json m = nlohmann::json::parse(read_cli_file(out + "/lazy_metrics.json"));
  return m["counters"].value("UncachedCompile", int64_t{-1});
}

std::vector<double> losses(const std::string& out) {
  nlohmann::json state = nlohmann::json::parse(read_cli_file(out + "/trainer_state.json"));
  std::vector<double> v;
  for (const auto& e : state["log_history"])
    if (e.contains("loss")) v.push_back(e["loss"].get<double>());
  return v;
}

TEST_F(SftCli, TrainsATinyQwen3OnConversationsWithFallingLoss) {
  const std::string out = dir_.sub("out");
  CliResult r = run_loom_cli(dir_, flags(out));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("[sft] --train_file '" + train_ + "': 16 rows, conversational; 0 longer"),
            std::string::npos)
      << r.out;
  std::vector<double> l = losses(out);
  ASSERT_EQ(l.size(), 8u);
  for (double x : l) EXPECT_TRUE(std::isfinite(x));
  EXPECT_LT(l[6] + l[7], l[0] + l[1]) << l[0] << " " << l[1] << " ... " << l[6] << " " << l[7];
  EXPECT_LT(l[0], std::log(603.0) + 1.0);  // about uniform over the vocabulary at the start
  // Rows of 16..39 tokens padded to the buckets 16, 32, 64: at most one graph each.
  EXPECT_GE(compiles(out), 1);
  EXPECT_LE(compiles(out), 3);

  // Assistant-only loss with truncation counted: another run, other losses.
  auto f = flags(dir_.sub("out2"));
  f.insert(f.end(), {"--assistant_only_loss", "true", "--max_length", "20"});
  CliResult a = run_loom_cli(dir_, f);
  ASSERT_EQ(a.exit_code, 0) << a.err << a.out;
  EXPECT_NE(a.out.find("16 rows, conversational; 16 longer than --max_length 20 truncated "
                       "(keep_start), 8 left without a label token dropped"),
            std::string::npos)
      << a.out;
  EXPECT_EQ(compiles(dir_.sub("out2")), 1);  // every row cut to 20 tokens: one bucket, one graph
  std::vector<double> la = losses(dir_.sub("out2"));
  ASSERT_EQ(la.size(), 8u);
  EXPECT_NE(la[0], l[0]);
}

// TRL's SFTTrainer losses (tools/make_sft_fixtures.py: trl_losses.json) for 12
// steps of the same random Qwen3 (tiny_qwen3/) on the same 8 conversations,
// every row in every batch, assistant-only loss, AdamW with the linear schedule.
TEST_F(SftCli, LossesEqualTrlSftTrainerForTwelveSteps) {
  const std::string out = dir_.sub("trl_out");
  CliResult r = run_loom_cli(dir_, {"train",
                                    "--task",
                                    "sft",
                                    "--model_name_or_path",
                                    kSftFixtures + "/tiny_qwen3",
                                    "--chat_template_path",
                                    kSftFixtures + "/chatml_generation.jinja",
                                    "--train_file",
                                    kSftFixtures + "/loss_rows.jsonl",
                                    "--assistant_only_loss",
                                    "true",
                                    "--max_length",
                                    "64",
                                    "--per_device_train_batch_size",
                                    "8",
                                    "--max_steps",
                                    "12",
                                    "--learning_rate",
                                    "0.01",
                                    "--logging_steps",
                                    "1",
                                    "--save_strategy",
                                    "no",
                                    "--output_dir",
                                    out,
                                    "--device",
                                    "lazy",
                                    "--disable_tqdm"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  nlohmann::json trl = nlohmann::json::parse(read_cli_file(kSftFixtures + "/trl_losses.json"));
  std::vector<double> want = trl["losses"].get<std::vector<double>>();
  std::vector<double> got = losses(out);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5 * want[i]) << "step " << i + 1;
}

TEST_F(SftCli, BadInputIsOneErrorLine) {
  auto f = flags(dir_.sub("out"));
  f.insert(f.end(), {"--packing", "true", "--max_length", "none"});
  expect_one_error_line(run_loom_cli(dir_, f), "--packing true needs --max_length N");
  const std::string bad = dir_.write(
      "bad.jsonl",
      R"({"messages": [{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}]})");
  f = flags(dir_.sub("out"));
  f.insert(f.end(), {"--train_file", bad});
  expect_one_error_line(run_loom_cli(dir_, f),
                        bad + ":1: field 'messages[1].role': unknown role 'robot'");
  f = flags(dir_.sub("out"));
  f.insert(f.end(), {"--chat_template_path", dir_.write("plain.jinja", "{{ messages[0].content }}"),
                     "--assistant_only_loss", "true"});
  expect_one_error_line(run_loom_cli(dir_, f),
                        "the chat template plain.jinja has no {% generation %}");
  f = flags(dir_.sub("out"));
  f.insert(f.end(), {"--task", "nope"});
  expect_one_error_line(run_loom_cli(dir_, f),
                        "expected causal-lm, masked-lm, text-classification or sft");
}

// The reply: --chat prints what the same greedy generation adds after the
// rendered prompt (the generation without --chat, from the rendered text),
// cut at the template's end-of-turn token, special tokens left out.
TEST_F(SftCli, GenerateChatRendersTheTemplateAndPrintsOnlyTheReply) {
  if (!require_shared("chat_templates/Qwen-Qwen2.5-7B-Instruct.jinja")) GTEST_SKIP();
  const std::string model = kSftFixtures + "/tiny_qwen3";
  const std::string tmpl = shared_data_dir() + "/chat_templates/Qwen-Qwen2.5-7B-Instruct.jinja";
  ChatInput in;
  in.messages_json =
      R"([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi there"}])";
  in.add_generation_prompt = true;
  const std::string text = ChatTemplate::from_file(tmpl).apply(in).text;
  EncodeOptions no_special;
  no_special.add_special_tokens = false;
  const size_t prompt_tokens =
      Tokenizer::from_pretrained(model).encode(text, no_special).ids.size();
  CliResult chat = run_loom_cli(
      dir_, {"generate", "--model_name_or_path", model, "--chat", "--prompt", "hi there",
             "--system", "be brief", "--chat_template_path", tmpl, "--max_new_tokens", "16"});
  ASSERT_EQ(chat.exit_code, 0) << chat.err;
  EXPECT_NE(chat.err.find("after " + std::to_string(prompt_tokens) + " prompt tokens"),
            std::string::npos)
      << chat.err;
  CliResult plain = run_loom_cli(dir_, {"generate", "--model_name_or_path", model, "--prompt", text,
                                        "--max_new_tokens", "16"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(plain.out.rfind(text, 0), 0u) << plain.out;
  std::string reply = plain.out.substr(text.size());
  reply = reply.substr(0, std::min(reply.find("<|im_end|>"), reply.find("<|endoftext|>")));
  for (size_t at; (at = reply.find("<|im_start|>")) != std::string::npos;) reply.erase(at, 12);
  if (!reply.empty() && reply.back() == '\n') reply.pop_back();
  EXPECT_EQ(chat.out, reply + "\n");
  EXPECT_EQ(chat.out.find("be brief"), std::string::npos);
  // A conversation from a file: the same prompt; malformed JSON is one error line.
  const std::string msgs = dir_.write(
      "m.json",
      R"([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi there"}])");
  CliResult file =
      run_loom_cli(dir_, {"generate", "--model_name_or_path", model, "--messages", msgs,
                          "--chat_template_path", tmpl, "--max_new_tokens", "16"});
  ASSERT_EQ(file.exit_code, 0) << file.err;
  EXPECT_EQ(file.out, chat.out);
  const std::string bad = dir_.write("bad.json", R"([{"role": "user", "content": )");
  expect_one_error_line(run_loom_cli(dir_, {"generate", "--model_name_or_path", model, "--messages",
                                            bad, "--chat_template_path", tmpl}),
                        "[loom generate] --messages '" + bad + "': chat template");
}

TEST_F(SftCli, DatasetNameTrainsFromTheHubCacheOrSaysHowToDownloadIt) {
  const std::string commit(40, 'd');
  const fs::path snap = fs::path(dir_.sub("hub")) / "datasets--org--chats" / "snapshots" / commit;
  fs::create_directories(snap / "data");
  fs::create_directories(fs::path(dir_.sub("hub")) / "datasets--org--chats" / "refs");
  std::ofstream(fs::path(dir_.sub("hub")) / "datasets--org--chats" / "refs" / "main") << commit;
  fs::copy_file(train_, snap / "data" / "train-00000-of-00001.jsonl");
  ScopedEnv cache("HF_HUB_CACHE", dir_.sub("hub"));
  std::vector<std::string> args = flags(dir_.sub("out"));
  const auto at = std::find(args.begin(), args.end(), "--train_file");
  *at = "--dataset_name";
  *(at + 1) = "org/chats";
  CliResult r = run_loom_cli(dir_, args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[sft] --dataset_name 'org/chats' (split train): 16 rows, conversational"),
            std::string::npos)
      << r.out;
  *(at + 1) = "org/nothere@v1";
  expect_one_error_line(run_loom_cli(dir_, args),
                        "[sft] --dataset_name 'org/nothere@v1': the Hugging Face cache holds no "
                        "snapshot of dataset org/nothere at revision 'v1'");
}

}  // namespace
}  // namespace loom::testing
