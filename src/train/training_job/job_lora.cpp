// LoRA in a job (loom/job.h; `loom train --use_lora`, --lora_r, --lora_alpha,
// --lora_dropout, --lora_target_modules, --merge_lora; PEFT's LoraConfig
// names, loom/lora.h): wrapping the pretrained model in a
// PeftModelForCausalLM before the Trainer sees it, and merge_lora's final
// save. Assumes the Trainer saves the adapter itself
// (PeftModelForCausalLM::save_pretrained) in checkpoints.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "loom/error.h"
#include "loom/job.h"
#include "loom/lora.h"
#include "loom/model_registry.h"
#include "train/checkpoint_files.h"

namespace loom {
namespace fs = std::filesystem;

namespace {

std::vector<std::string> split_target_modules(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    if (b == std::string::npos) continue;
    out.push_back(item.substr(b, e - b + 1));
  }
  return out;
}

std::string lora_number_text(double v) {
  std::ostringstream s;
  s << v;  // 8, 0.05
  return s.str();
}

// An adapter directory given as --model_name_or_path keeps its own
// adapter_config.json (PEFT's PeftModel.from_pretrained): a LoRA flag given
// with another value would be silently ignored, so it is an error.
void check_adapter_matches_flags(const JobArguments& job, const std::set<std::string>& given,
                                 const LoraConfig& saved) {
  auto differs = [&](const char* flag, const std::string& value, const std::string& saved_value) {
    LOOM_CHECK(
        !given.count(flag), "[loom train] --", flag, " ", value, " differs from the adapter's ",
        saved_value, " (adapter_config.json of ", job.model_name_or_path,
        "): an adapter trains on with its own config; drop the flag, or give the base model");
  };
  if (job.lora_r != saved.r) differs("lora_r", std::to_string(job.lora_r), std::to_string(saved.r));
  if (job.lora_alpha != saved.lora_alpha)
    differs("lora_alpha", lora_number_text(job.lora_alpha), lora_number_text(saved.lora_alpha));
  if (job.lora_dropout != saved.lora_dropout)
    differs("lora_dropout", lora_number_text(job.lora_dropout),
            lora_number_text(saved.lora_dropout));
  std::vector<std::string> want = split_target_modules(job.lora_target_modules),
                           have = saved.target_modules;
  std::sort(want.begin(), want.end());
  std::sort(have.begin(), have.end());
  if (want != std::vector<std::string>{"all-linear"} && want != have) {
    std::string list;
    for (const std::string& m : have) list += (list.empty() ? "" : ",") + m;
    differs("lora_target_modules", job.lora_target_modules, list);
  }
}

}  // namespace

void check_lora_arguments(const JobArguments& job) {
  if (job.use_lora) {
    LOOM_CHECK(!job.model_name_or_path.empty(),
               "[loom train] --use_lora fine-tunes a pretrained model: give --model_name_or_path");
    return;
  }
  LOOM_CHECK(!job.merge_lora, "[loom train] --merge_lora needs --use_lora");
}

std::shared_ptr<PretrainedModel> apply_lora(const JobArguments& job,
                                            const std::set<std::string>& given,
                                            const ModelPlan& plan,
                                            std::shared_ptr<PretrainedModel> model) {
  if (!job.use_lora) return model;
  if (auto* peft = dynamic_cast<PeftModelForCausalLM*>(model.get())) {
    check_adapter_matches_flags(job, given, peft->peft_config());
    return model;  // --model_name_or_path is an adapter: train it further
  }
  auto lm = std::dynamic_pointer_cast<CausalLM>(model);
  LOOM_CHECK(lm != nullptr && model_task_of(plan.task) == kTaskCausalLM,
             "[loom train] --use_lora supports tasks causal-lm and sft (",
             model_types_for_task(kTaskCausalLM), "), got ", plan.task, " (", model->architecture(),
             ")");
  LoraConfig config;
  config.r = job.lora_r;
  config.lora_alpha = job.lora_alpha;
  config.lora_dropout = job.lora_dropout;
  config.target_modules = split_target_modules(job.lora_target_modules);
  // A local base is written as an absolute path, which peft (and loom) read
  // from any directory; a hub id stays an id, with its revision when not main.
  std::error_code ec;
  if (std::filesystem::is_directory(plan.pretrained_dir, ec)) {
    config.base_model_name_or_path =
        std::filesystem::absolute(plan.pretrained_dir).lexically_normal().string();
    if (config.base_model_name_or_path.size() > 1 && config.base_model_name_or_path.back() == '/')
      config.base_model_name_or_path.pop_back();
  } else {
    config.base_model_name_or_path = plan.pretrained_dir;
    if (job.revision != "main") config.revision = job.revision;
  }
  return get_peft_model(lm, config);
}

void save_merged_lora(PretrainedModel& model, const std::string& output_dir,
                      const std::string& tokenizer_dir) {
  auto* peft = dynamic_cast<PeftModelForCausalLM*>(&model);
  LOOM_CHECK(peft != nullptr, "[loom train] --merge_lora: the model has no LoRA adapters");
  std::shared_ptr<CausalLM> merged = peft->merge_and_unload();
  // save_pretrained replaces a whole directory: write a private one inside
  // output_dir and move its files up, leaving checkpoints and adapter/ alone.
  const fs::path tmp = fs::path(output_dir) / ("tmp-merged-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove_all(tmp, ec);
  merged->save_pretrained(tmp.string());
  for (const std::string& name : train::list_dir(tmp.string())) {
    fs::rename(tmp / name, fs::path(output_dir) / name, ec);
    LOOM_CHECK(!ec, "[loom train] --merge_lora: cannot move ", name, " into ", output_dir, " (",
               ec.message(), ")");
  }
  fs::remove_all(tmp, ec);
  for (const char* f : {"adapter_config.json", "adapter_model.safetensors"})
    fs::remove(fs::path(output_dir) / f, ec);  // output_dir is the merged model now
  if (!tokenizer_dir.empty()) train::copy_tokenizer_files(tokenizer_dir, output_dir);
}

}  // namespace loom
