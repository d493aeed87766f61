// The JobArguments of one case of tests/fixtures/sft/cases.json (written by
// TRL, tools/make_sft_fixtures.py): its chat template ("shared:<file>" from
// ../shared/data/chat_templates, "fixture:<file>" from tests/fixtures/sft)
// and the SFTConfig fields the case sets (max_length, completion_only_loss,
// assistant_only_loss). The caller names the rows file (the case's JSONL, or
// its Parquet twin).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/shared_data.h"
#include "loom/job.h"
#include "loom/model_registry.h"

namespace loom::testing {

inline JobArguments sft_case_job(const nlohmann::json& c, const std::string& tokenizer_dir,
                                 const std::string& train_file) {
  const std::string fixtures = std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/sft";
  JobArguments job;
  job.task = kTaskSft;
  job.tokenizer_name = tokenizer_dir;
  job.train_file = train_file;
  const std::string tmpl = c["template"];
  if (tmpl.rfind("shared:", 0) == 0)
    job.chat_template_path = shared_data_dir() + "/chat_templates/" + tmpl.substr(7);
  else if (tmpl.rfind("fixture:", 0) == 0)
    job.chat_template_path = fixtures + "/" + tmpl.substr(8);
  const nlohmann::json& cfg = c["config"];
  if (cfg.contains("max_length"))
    job.max_length = cfg["max_length"].is_null() ? std::nullopt
                                                 : std::optional(cfg["max_length"].get<int64_t>());
  if (cfg.contains("completion_only_loss"))
    job.completion_only_loss = cfg["completion_only_loss"].get<bool>();
  if (cfg.contains("assistant_only_loss"))
    job.assistant_only_loss = cfg["assistant_only_loss"].get<bool>();
  return job;
}

}  // namespace loom::testing
