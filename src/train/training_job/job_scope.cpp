// check_arguments_serve_task (loom/job.h): which task reads each data
// argument, so that one given to a job of another task is refused by name
// instead of being accepted and ignored (issue 42: `--packing true` on a
// causal-lm run trained exactly as without it). The task scopes follow the
// scripts whose flags these are: run_clm (block_size, keep_linebreaks),
// run_mlm (mlm_probability, max_seq_length), run_glue (max_seq_length,
// pad_to_max_length, label and pair columns) and TRL's SFTConfig (sft).
// Assumes plan.task is resolved (plan_model) and `given` holds the names the
// caller set on purpose (JobOptions::given).
#include <set>
#include <string>
#include <vector>

#include "loom/error.h"
#include "loom/job.h"
#include "loom/model_registry.h"

namespace loom {
namespace {

struct Scope {
  const char* name;
  std::vector<const char*> tasks;  // the tasks that read it
};

const std::vector<Scope>& scopes() {
  static const std::vector<Scope> table = {
      {"block_size", {kTaskCausalLM}},
      {"keep_linebreaks", {kTaskCausalLM}},
      {"max_seq_length", {kTaskMaskedLM, kTaskTextClassification}},
      {"mlm_probability", {kTaskMaskedLM}},
      {"pad_to_max_length", {kTaskTextClassification}},
      {"label_column", {kTaskTextClassification}},
      {"text_pair_column", {kTaskTextClassification}},
      {"pad_to_multiple_of", {kTaskTextClassification, kTaskSft}},
      {"max_length", {kTaskSft}},
      {"completion_only_loss", {kTaskSft}},
      {"assistant_only_loss", {kTaskSft}},
      {"dataset_text_field", {kTaskSft}},
      {"eos_token", {kTaskSft}},
      {"chat_template_path", {kTaskSft}},
      {"packing", {kTaskSft}},
      {"packing_strategy", {kTaskSft}},
      {"padding_free", {kTaskSft}},
      {"dataset_name", {kTaskSft}},
      {"dataset_config", {kTaskSft}},
      {"dataset_config_name", {kTaskSft}},
      {"dataset_train_split", {kTaskSft}},
      {"dataset_test_split", {kTaskSft}},
  };
  return table;
}

std::string joined(const std::vector<const char*>& tasks) {
  std::string out;
  for (const char* t : tasks) out += (out.empty() ? "" : " or ") + std::string(t);
  return out;
}

}  // namespace

void check_arguments_serve_task(const JobArguments& job, const ModelPlan& plan,
                                const std::set<std::string>& given) {
  // TRL's name before 0.20 for SFTConfig.max_length.
  LOOM_CHECK(!(plan.task == kTaskSft && given.count("max_seq_length")),
             "[job] --max_seq_length: task sft reads --max_length (TRL renamed max_seq_length to "
             "max_length in 0.20)");
  for (const Scope& s : scopes()) {
    if (!given.count(s.name)) continue;
    bool serves = false;
    for (const char* t : s.tasks) serves = serves || plan.task == t;
    LOOM_CHECK(serves, "[job] --", s.name, ": read by task ", joined(s.tasks),
               " only; this job's task is ", plan.task,
               plan.task == kTaskSft || std::string(s.tasks[0]) != kTaskSft
                   ? ""
                   : " (conversations or prompt-completion rows: add --task sft)");
  }
  if (job.use_lora) return;
  for (const char* lora : {"lora_r", "lora_alpha", "lora_dropout", "lora_target_modules"})
    LOOM_CHECK(!given.count(lora), "[job] --", lora,
               " needs --use_lora (it sets up the adapter "
               "--use_lora trains)");
}

}  // namespace loom
