// examples/lora_llama.cpp: a LoRA fine-tune of a Llama through the API, as
// PEFT does in Python: load the base model, wrap it with get_peft_model
// (rank-8 adapters on q_proj and v_proj, the base frozen), train the adapters
// with the Trainer on the lazy device, save the adapter in PEFT's format
// (adapter_config.json + adapter_model.safetensors), then load base + adapter
// again with auto_from_pretrained and check that it computes the same logits.
//
// Assumes BASE_DIR is a LlamaForCausalLM save_pretrained directory with its
// tokenizer files (a `loom train --model_type llama` output, or a Hugging Face
// snapshot such as TinyLlama). Any causal LM works; Qwen2 has the same targets.
//
//   build/example_lora_llama BASE_DIR TRAIN_TXT ADAPTER_DIR [max_steps (50)] [block_size (32)]
//
// Prints PEFT's "trainable params" line, the Trainer's log lines and
// "adapter reloaded: ..." with the largest logit difference (0: same model).
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "loom/causal_lm.h"
#include "loom/collator.h"
#include "loom/dataset.h"
#include "loom/error.h"
#include "loom/job.h"
#include "loom/lora.h"
#include "loom/ops.h"
#include "loom/pretrained_model.h"
#include "loom/tokenizer.h"
#include "loom/trainer.h"

namespace {

// TRAIN_TXT as run_clm tokenizes it (loom/job.h: every line, then block_size
// blocks with labels = input_ids), for the base model's task.
std::shared_ptr<const loom::data::Dataset> load_blocks(const std::string& base_dir,
                                                       const std::string& path,
                                                       const loom::Tokenizer& tokenizer,
                                                       int64_t block_size) {
  loom::JobArguments job;
  job.model_name_or_path = base_dir;
  job.train_file = path;
  job.block_size = block_size;
  loom::ModelPlan plan = loom::plan_model(job, tokenizer);
  return loom::load_job_data(job, plan, tokenizer, /*want_train=*/true, /*want_eval=*/false).train;
}

// Logits of `model` for the first block, on the cpu, eval mode.
std::vector<float> logits_of(loom::CausalLM& model, const loom::data::Example& block) {
  loom::NoGradGuard no_grad;
  model.eval();
  model.to(loom::Device("cpu"));
  loom::ModelInputs in;
  in.input_ids =
      loom::tensor_i64(block.input_ids, {1, static_cast<int64_t>(block.input_ids.size())});
  return model.forward(in).logits.to_vector<float>();
}

int run(const std::string& base_dir, const std::string& train_txt, const std::string& adapter_dir,
        int64_t max_steps, int64_t block_size) {
  loom::Tokenizer tokenizer = loom::Tokenizer::from_pretrained(base_dir);
  auto blocks = load_blocks(base_dir, train_txt, tokenizer, block_size);
  auto base = std::dynamic_pointer_cast<loom::CausalLM>(loom::auto_from_pretrained(base_dir));
  if (!base) throw loom::Error(base_dir + ": not a causal LM");

  loom::LoraConfig config;  // PEFT's LoraConfig(r=8, lora_alpha=16, target_modules=[...])
  config.r = 8;
  config.lora_alpha = 16;
  config.target_modules = {"q_proj", "v_proj"};
  config.base_model_name_or_path = base_dir;
  auto peft = loom::get_peft_model(base, config);
  const int64_t trainable = peft->num_parameters(/*only_trainable=*/true);
  const int64_t all = peft->num_parameters();
  std::printf("trainable params: %lld || all params: %lld || trainable%%: %.4f\n",
              static_cast<long long>(trainable), static_cast<long long>(all),
              100.0 * static_cast<double>(trainable) / static_cast<double>(all));

  loom::TrainingArguments args;
  args.output_dir = adapter_dir;
  args.overwrite_output_dir = true;
  args.device = "lazy";
  args.per_device_train_batch_size = 2;
  args.dataloader_drop_last = true;
  args.learning_rate = 1e-2;  // LoRA takes larger steps than full fine-tuning
  args.max_steps = max_steps;
  args.logging_steps = std::max<int64_t>(1, max_steps / 5);
  args.save_strategy = "no";
  args.report_to = "none";
  args.disable_tqdm = true;
  loom::Trainer trainer(peft, args, blocks, nullptr,
                        {.data_collator = std::make_shared<loom::data::CausalLMCollator>(),
                         .tokenizer_dir = base_dir});
  loom::TrainOutput out = trainer.train();
  trainer.save_model();  // adapter_config.json + adapter_model.safetensors
  std::printf("train_loss %.4f after %lld steps; adapter in %s\n", out.training_loss,
              static_cast<long long>(out.global_step), adapter_dir.c_str());

  // PEFT's AutoPeftModelForCausalLM.from_pretrained(adapter_dir): the base
  // from base_model_name_or_path, then the adapter.
  auto reloaded =
      std::dynamic_pointer_cast<loom::CausalLM>(loom::auto_from_pretrained(adapter_dir));
  const loom::data::Example first = blocks->get(0);
  std::vector<float> a = logits_of(*peft, first), b = logits_of(*reloaded, first);
  // The base alone (a fresh load: get_peft_model wrapped `base` in place).
  auto plain = std::dynamic_pointer_cast<loom::CausalLM>(loom::auto_from_pretrained(base_dir));
  std::vector<float> c = logits_of(*plain, first);
  double worst = 0, moved = 0;  // reloaded vs trained; trained vs the base
  bool finite = a.size() == b.size() && a.size() == c.size();
  for (size_t i = 0; finite && i < a.size(); ++i) {
    finite = std::isfinite(a[i]) && std::isfinite(b[i]);
    worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
    moved = std::max(moved, std::fabs(double(a[i]) - c[i]));
  }
  if (!finite || !(worst < 1e-5) || !(moved > 1e-6)) {
    std::fprintf(stderr, "lora_llama: finite %d, reload diff %g, change from the base %g\n",
                 int(finite), worst, moved);
    return 1;
  }
  std::printf(
      "adapter reloaded: %s, max |logit difference| %g; the adapter moved the logits "
      "by up to %g\n",
      reloaded->type_name().c_str(), worst, moved);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: %s BASE_DIR TRAIN_TXT ADAPTER_DIR [max_steps (50)] [block_size (32)]\n",
                 argv[0]);
    return 2;
  }
  try {
    int64_t max_steps = argc > 4 ? std::stoll(argv[4]) : 50;
    int64_t block_size = argc > 5 ? std::stoll(argv[5]) : 32;
    return run(argv[1], argv[2], argv[3], max_steps, block_size);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
