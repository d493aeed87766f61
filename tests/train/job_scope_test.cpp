// check_arguments_serve_task (loom/job.h): a data argument given to a job
// whose task does not read it is refused by name (issue 42: `--packing true`
// on causal-lm, `--max_seq_length` on sft and `--lora_r` without `--use_lora`
// were accepted and trained exactly as without them); the same arguments on
// the task that reads them pass.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "loom/error.h"
#include "loom/job.h"
#include "loom/model_registry.h"

namespace loom {
namespace {

// The error check_arguments_serve_task throws for `given` on `task`, or "".
std::string job_scope_error(const std::string& task, const std::set<std::string>& given,
                            bool use_lora = false) {
  JobArguments job;
  job.use_lora = use_lora;
  ModelPlan plan;
  plan.task = task;
  try {
    check_arguments_serve_task(job, plan, given);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(JobScope, EachTaskTakesItsOwnArguments) {
  EXPECT_EQ(job_scope_error(kTaskCausalLM, {"block_size", "keep_linebreaks", "text_column"}), "");
  EXPECT_EQ(job_scope_error(kTaskMaskedLM, {"mlm_probability", "max_seq_length"}), "");
  EXPECT_EQ(job_scope_error(kTaskTextClassification,
                            {"max_seq_length", "pad_to_max_length", "label_column",
                             "text_pair_column", "pad_to_multiple_of"}),
            "");
  EXPECT_EQ(job_scope_error(kTaskSft,
                            {"max_length", "packing", "packing_strategy", "padding_free",
                             "assistant_only_loss", "completion_only_loss", "chat_template_path",
                             "eos_token", "dataset_text_field", "pad_to_multiple_of"}),
            "");
  EXPECT_EQ(job_scope_error(kTaskCausalLM, {"lora_r", "lora_alpha", "lora_target_modules"},
                            /*use_lora=*/true),
            "");
}

TEST(JobScope, AnArgumentOfAnotherTaskIsRefusedByName) {
  std::string e = job_scope_error(kTaskCausalLM, {"packing"});
  EXPECT_NE(e.find("--packing: read by task sft only; this job's task is causal-lm"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("(conversations or prompt-completion rows: add --task sft)"), std::string::npos)
      << e;
  e = job_scope_error(kTaskCausalLM, {"mlm_probability"});
  EXPECT_NE(e.find("--mlm_probability: read by task masked-lm only"), std::string::npos) << e;
  e = job_scope_error(kTaskTextClassification, {"block_size"});
  EXPECT_NE(e.find("--block_size: read by task causal-lm only; this job's task is "
                   "text-classification"),
            std::string::npos)
      << e;
  e = job_scope_error(kTaskCausalLM, {"pad_to_multiple_of"});
  EXPECT_NE(e.find("read by task text-classification or sft only"), std::string::npos) << e;
  e = job_scope_error(kTaskMaskedLM, {"label_column"});
  EXPECT_NE(e.find("--label_column"), std::string::npos) << e;
}

TEST(JobScope, SftNamesMaxLengthForTrlsOldMaxSeqLength) {
  std::string e = job_scope_error(kTaskSft, {"max_seq_length"});
  EXPECT_NE(e.find("--max_seq_length: task sft reads --max_length"), std::string::npos) << e;
  e = job_scope_error(kTaskSft, {"block_size"});
  EXPECT_NE(e.find("--block_size: read by task causal-lm only; this job's task is sft"),
            std::string::npos)
      << e;
}

TEST(JobScope, LoraSettingsNeedUseLora) {
  for (const char* name : {"lora_r", "lora_alpha", "lora_dropout", "lora_target_modules"}) {
    std::string e = job_scope_error(kTaskCausalLM, {name});
    EXPECT_NE(e.find(std::string("--") + name + " needs --use_lora"), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace loom
