// The Trainer with a LoRA model (loom/lora.h) on a tiny GPT-2 (Conv1D
// c_attn, lora_dropout and model dropout on): checkpoints hold the adapter
// (adapter_model.safetensors, no model.safetensors) and AdamW state for the
// adapter weights only; a run stopped at step 3 and resumed by a new Trainer
// (whose fresh adapters are drawn from another seed, so only the checkpoint
// can make them equal) logs the same losses and ends with the same adapter
// weights, bit for bit, as an uninterrupted one; the frozen base weights end
// exactly as they started. On the cpu and the lazy device.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "loom/lora.h"
#include "loom/safetensors.h"
#include "train/train_test_util.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

struct LoraStopAt : TrainerCallback {
  int64_t at;
  explicit LoraStopAt(int64_t s) : at(s) {}
  std::string name() const override { return "LoraStopAt"; }
  void on_step_end(const TrainingArguments&, const TrainerState& s, TrainerControl& c) override {
    if (s.global_step == at) c.should_training_stop = c.should_save = true;
  }
};

struct LoraRun {
  TrainerState state;
  std::map<std::string, std::vector<float>> params;  // every parameter, base included
};

LoraRun run_lora_trainer(const std::string& dir, const std::string& device, uint64_t lora_seed,
                         std::vector<std::shared_ptr<TrainerCallback>> callbacks,
                         std::optional<std::string> resume = std::nullopt) {
  TrainingArguments a = testing::quiet_args(dir, device);
  a.per_device_train_batch_size = 4;
  a.max_steps = 6;
  a.logging_steps = 1;
  a.warmup_steps = 2;
  a.weight_decay = 0.01;
  auto base = testing::tiny_gpt2(/*init_seed=*/5, /*dropout=*/0.1);
  LoraConfig cfg;
  cfg.r = 4;
  cfg.lora_alpha = 8;
  cfg.lora_dropout = 0.1;
  manual_seed(lora_seed);
  auto model = get_peft_model(base, cfg);
  TrainerOptions opt;
  opt.callbacks = std::move(callbacks);
  Trainer t(model, a, testing::token_dataset(32, 8, true), nullptr, opt);
  testing::silence(t);
  t.train(resume);
  return {t.state(), testing::snapshot(t.model())};
}

class LoraTrainer : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (Device(GetParam()).is_lazy()) testing::reset_lazy_and_wait();
  }
};

TEST_P(LoraTrainer, CheckpointsHoldTheAdapterAndResumeIsExact) {
  testing::TempDir a_dir, b_dir;
  LoraRun a = run_lora_trainer(a_dir.path(), GetParam(), 1, {});
  ASSERT_EQ(testing::logged(a.state, "loss").size(), 6u);

  LoraRun b1 = run_lora_trainer(b_dir.path(), GetParam(), 1, {std::make_shared<LoraStopAt>(3)});
  const std::string ckpt = b_dir.sub("checkpoint-3");
  EXPECT_TRUE(fs::exists(ckpt + "/adapter_model.safetensors"));
  EXPECT_TRUE(fs::exists(ckpt + "/adapter_config.json"));
  EXPECT_FALSE(fs::exists(ckpt + "/model.safetensors")) << "LoRA checkpoints hold the adapter only";
  auto opt_file = safetensors::File::open(ckpt + "/optimizer.safetensors");
  int moments = 0;
  for (const auto& info : opt_file.tensors())
    moments += info.name.find("exp_avg") != std::string::npos;
  EXPECT_EQ(moments, 2 * 4) << "two AdamW moments for each of the 4 adapter weights";

  LoraRun b2 = run_lora_trainer(b_dir.path(), GetParam(), 77, {}, "last");
  EXPECT_EQ(b2.state.global_step, 6);
  auto la = testing::logged(a.state, "loss"), lb = testing::logged(b2.state, "loss");
  ASSERT_EQ(la.size(), lb.size());
  for (size_t i = 0; i < la.size(); ++i) {
    EXPECT_EQ(la[i].first, lb[i].first);
    EXPECT_EQ(std::memcmp(&la[i].second, &lb[i].second, sizeof(double)), 0)
        << "loss at step " << la[i].first << ": " << la[i].second << " vs " << lb[i].second;
  }
  testing::expect_bitwise_equal(a.params, b2.params);

  // The base did not move: equal to a fresh model from the same seed.
  auto fresh = testing::snapshot(*testing::tiny_gpt2(5, 0.1));
  size_t base_checked = 0;
  for (const auto& [name, v] : fresh) {
    const auto it = a.params.find("base_model.model." + name);
    ASSERT_NE(it, a.params.end()) << name;
    EXPECT_EQ(std::memcmp(v.data(), it->second.data(), v.size() * sizeof(float)), 0) << name;
    ++base_checked;
  }
  EXPECT_GT(base_checked, 10u);
}

INSTANTIATE_TEST_SUITE_P(Devices, LoraTrainer, ::testing::Values("cpu", "lazy"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace loom
