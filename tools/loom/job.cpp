// prepare_job: the tokenizer, model, datasets, collator and compute_metrics of
// a `loom train` / `loom evaluate` run (run_clm / run_mlm / run_glue's set-up),
// plus the results files and printed metrics blocks of transformers'
// Trainer.save_metrics / log_metrics. Assumes job_model.cpp and job_data.cpp.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "job.h"
#include "loom/collator.h"
#include "loom/error.h"
#include "loom/hub.h"

namespace loom::cli {
namespace fs = std::filesystem;

namespace {

std::string tokenizer_dir(const JobArgs& job) {
  std::string dir = job.tokenizer_name.empty() ? job.model_name_or_path : job.tokenizer_name;
  LOOM_CHECK(!dir.empty(), "[tokenizer] give --tokenizer_name DIR (or --model_name_or_path DIR ",
             "holding tokenizer files)");
  LOOM_CHECK(fs::is_directory(dir), "[tokenizer] '", dir, "': no such directory");
  return dir;
}

// Hub ids of --model_name_or_path / --tokenizer_name -> their snapshots in the
// local Hugging Face cache at --revision (loom/hub.h); directories stay.
JobArgs with_hub_dirs(JobArgs job) {
  if (!job.model_name_or_path.empty())
    job.model_name_or_path =
        resolve_model_dir(job.model_name_or_path, job.revision, "[model] --model_name_or_path");
  if (!job.tokenizer_name.empty())
    job.tokenizer_name =
        resolve_model_dir(job.tokenizer_name, job.revision, "[tokenizer] --tokenizer_name");
  return job;
}

std::shared_ptr<const data::Collator> make_collator(const JobArgs& job, const ModelPlan& plan,
                                                    const Tokenizer& tok, uint64_t seed) {
  data::PadOptions pad;
  pad.pad_to_multiple_of = job.pad_to_multiple_of;
  pad.pad_id = tok.pad_token_id().value_or(tok.eos_token_id().value_or(0));
  if (plan.task == "causal-lm") return std::make_shared<data::CausalLMCollator>(pad);
  if (plan.task == "masked-lm") {
    auto mask = tok.mask_token_id();
    LOOM_CHECK(mask.has_value(), "[tokenizer] masked-lm needs a tokenizer with a mask token");
    data::MaskingOptions m;
    m.mlm_probability = job.mlm_probability;
    m.mask_id = *mask;
    m.vocab_size = tok.vocab_size();
    m.seed = seed;
    for (auto id : {tok.cls_token_id(), tok.sep_token_id(), tok.pad_token_id(), tok.bos_token_id(),
                    tok.eos_token_id()})
      if (id) m.special_ids.push_back(*id);
    return std::make_shared<data::MaskedLMCollator>(pad, m);
  }
  if (job.pad_to_max_length) {
    pad.strategy = data::PadOptions::Strategy::kMaxLength;
    pad.max_length = job.max_seq_length.value_or(128);
  }
  return std::make_shared<data::PaddingCollator>(pad);
}

// "0:01:02.50" as transformers' metrics_format prints runtimes.
std::string format_runtime(double seconds) {
  int64_t whole = static_cast<int64_t>(seconds);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%" PRId64 ":%02" PRId64 ":%05.2f", whole / 3600,
                (whole / 60) % 60, seconds - static_cast<double>(whole / 60 * 60));
  return buf;
}

std::string format_metric(const std::string& key, double v) {
  char buf[64];
  if (key.size() >= 8 && key.compare(key.size() - 8, 8, "_runtime") == 0) return format_runtime(v);
  if (key == "total_flos") {
    std::snprintf(buf, sizeof buf, "%.0fGF", v / 1e9);
  } else if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.4f", v);
  }
  return buf;
}

}  // namespace

PreparedJob prepare_job(const JobCommand& cmd, TrainingArguments& training, bool want_train,
                        bool want_eval) {
  const JobArgs job = with_hub_dirs(cmd.job);
  PreparedJob p;
  if (want_train) check_lora_flags(job);
  p.tokenizer_dir = tokenizer_dir(job);
  Tokenizer tok = Tokenizer::from_pretrained(p.tokenizer_dir);
  p.plan = plan_model(job, tok);
  if (want_train) check_training_fits(p.plan, training);  // before reading any data
  p.data = load_job_data(job, p.plan, tok, want_train, want_eval);
  p.model = build_model(p.plan, p.data, static_cast<uint64_t>(training.seed));
  if (want_train) {
    // The adapter names its base as the user did: a hub id stays an id (as peft).
    ModelPlan named = p.plan;
    if (p.plan.adapter_dir.empty() && job.model_name_or_path != cmd.job.model_name_or_path)
      named.pretrained_dir = cmd.job.model_name_or_path;
    p.model = apply_lora(job, cmd.given, named, p.model);
  }
  p.options.data_collator = make_collator(job, p.plan, tok, training.sampler_seed());
  p.options.tokenizer_dir = p.tokenizer_dir;
  if (p.plan.task == "text-classification") {
    p.options.compute_metrics = classification_metrics;
  } else {
    p.options.compute_metrics = perplexity_metrics;
    // Gathering [N, T, vocab] logits only to take exp(loss) would not fit in memory.
    if (!cmd.given.count("prediction_loss_only")) training.prediction_loss_only = true;
  }
  return p;
}

void write_metrics_json(const std::string& path, const Logs& metrics) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : metrics) j[k] = v;
  if (fs::path(path).has_parent_path()) fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << j.dump(4) << "\n";
  out.flush();
  LOOM_CHECK(out.good(), "[loom] ", path, ": cannot write file");
}

void print_metrics(const std::string& split, const Logs& metrics) {
  size_t kw = 0, vw = 0;
  std::vector<std::pair<std::string, std::string>> rows;
  for (const auto& [k, v] : metrics) {
    rows.emplace_back(k, format_metric(k, v));
    kw = std::max(kw, k.size());
    vw = std::max(vw, rows.back().second.size());
  }
  std::printf("***** %s metrics *****\n", split.c_str());
  for (const auto& [k, v] : rows)
    std::printf("  %-*s = %*s\n", static_cast<int>(kw), k.c_str(), static_cast<int>(vw), v.c_str());
  std::fflush(stdout);
}

}  // namespace loom::cli
