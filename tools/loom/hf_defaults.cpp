// hf_value_asks_nothing (flags.h): the value each Hugging Face flag that loom
// does not implement has by default, so that giving exactly that value asks
// loom for nothing and is accepted. A training_args.json that transformers
// (or loom itself: do_predict) wrote, or `--fp16 false` from a launch script,
// then runs, while `--fp16` alone is still refused by name with its reason
// (hf_flag_answer, refused flags). Defaults: transformers 5's
// TrainingArguments, run_clm / run_mlm / run_glue's ModelArguments and
// DataTrainingArguments, TRL's SFTConfig and PEFT's LoraConfig, as of
// 2026-12. "none" stands for JSON null and Python's None.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "flags.h"

namespace loom::cli {
namespace {

struct Default {
  const char* name;
  std::vector<const char*> values;  // lowercase
};

const std::vector<Default>& defaults() {
  static const std::vector<Default> table = {
      // TrainingArguments (and do_predict, which loom refuses by name).
      {"do_predict", {"false"}},
      {"fp16", {"false"}},
      {"fp16_full_eval", {"false"}},
      {"half_precision_backend", {"auto"}},
      {"tf32", {"none", "false"}},
      {"torch_compile", {"false"}},
      {"torch_compile_backend", {"none"}},
      {"torch_compile_mode", {"none"}},
      {"push_to_hub", {"false"}},
      {"hub_model_id", {"none"}},
      {"hub_token", {"none"}},
      {"hub_strategy", {"every_save"}},
      {"hub_private_repo", {"none", "false"}},
      {"hub_always_push", {"false"}},
      {"deepspeed", {"none"}},
      {"local_rank", {"-1"}},
      {"eval_accumulation_steps", {"none"}},
      {"log_level", {"passive"}},
      {"log_level_replica", {"warning"}},
      {"neftune_noise_alpha", {"none"}},
      {"group_by_length", {"false"}},
      {"remove_unused_columns", {"true"}},
      {"dataloader_pin_memory", {"true", "false"}},
      {"dataloader_persistent_workers", {"false"}},
      {"dataloader_prefetch_factor", {"none"}},
      {"full_determinism", {"false"}},
      {"auto_find_batch_size", {"false"}},
      {"average_tokens_across_devices", {"true"}},
      {"optim_args", {"none"}},
      {"use_liger_kernel", {"false"}},
      {"save_on_each_node", {"false"}},
      {"skip_memory_metrics", {"true"}},
      // run_clm / run_glue's ModelArguments and DataTrainingArguments.
      {"cache_dir", {"none"}},
      {"test_file", {"none"}},
      {"trust_remote_code", {"false"}},
      {"use_fast_tokenizer", {"true"}},
      {"token", {"none"}},
      {"low_cpu_mem_usage", {"false"}},
      {"preprocessing_num_workers", {"none"}},
      {"overwrite_cache", {"false"}},
      {"streaming", {"false"}},
      {"line_by_line", {"false"}},
      // TRL's SFTConfig, PEFT's LoraConfig.
      {"dataset_num_proc", {"none"}},
      {"use_rslora", {"false"}},
      {"use_dora", {"false"}},
      {"modules_to_save", {"none"}},
      {"lora_bias", {"none"}},
      {"init_lora_weights", {"true"}},
  };
  return table;
}

}  // namespace

bool hf_value_asks_nothing(const std::string& name, const std::string& value) {
  std::string v = value;
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v == "null") v = "none";
  if (auto b = parse_bool_text(v)) v = *b ? "true" : "false";
  for (const Default& d : defaults())
    if (name == d.name)
      return std::any_of(d.values.begin(), d.values.end(), [&](const char* x) { return v == x; });
  return false;
}

}  // namespace loom::cli
