// build_job (loom/job.h): the tokenizer, model, datasets, collator and
// compute_metrics of a job, as run_clm / run_mlm / run_glue set them up.
// Assumes job_model.cpp (plan_model, build_model), job_data.cpp
// (load_job_data) and job_lora.cpp (apply_lora).
#include <algorithm>
#include <filesystem>

#include "data/sft/sft_packing.h"
#include "loom/collator.h"
#include "loom/error.h"
#include "loom/hub.h"
#include "loom/job.h"
#include "loom/model_registry.h"

namespace loom {
namespace fs = std::filesystem;

namespace {

std::string tokenizer_dir(const JobArguments& job) {
  std::string dir = job.tokenizer_name.empty() ? job.model_name_or_path : job.tokenizer_name;
  LOOM_CHECK(!dir.empty(), "[tokenizer] give --tokenizer_name DIR (or --model_name_or_path DIR ",
             "holding tokenizer files)");
  LOOM_CHECK(fs::is_directory(dir), "[tokenizer] '", dir, "': no such directory");
  return dir;
}

// Hub ids of model_name_or_path / tokenizer_name -> their snapshots in the
// local Hugging Face cache at `revision` (loom/hub.h); directories stay.
JobArguments with_hub_dirs(JobArguments job) {
  if (!job.model_name_or_path.empty())
    job.model_name_or_path =
        resolve_model_dir(job.model_name_or_path, job.revision, "[model] --model_name_or_path");
  if (!job.tokenizer_name.empty())
    job.tokenizer_name =
        resolve_model_dir(job.tokenizer_name, job.revision, "[tokenizer] --tokenizer_name");
  return job;
}

// Task sft: the examples carry their labels (-100 where masked); batches are
// padded (TRL's pad token: the tokenizer's, else EOS) to the smallest length
// bucket that holds the longest example, so a lazy device compiles at most one
// graph per bucket: powers of two from 16 up to max_length (and max_length
// itself), or --pad_to_multiple_of's multiples when given.
// --packing bfd (padding-free, as TRL turns on for it): one packed row per
// example, every row max_length tokens, so an epoch is one graph.
// --padding_free (or wrapped packing with it): each batch's sequences in one
// row, padded to a bucket of max_length x batch size.
std::shared_ptr<const data::Collator> sft_collator(const JobArguments& job, const ModelPlan& plan,
                                                   const Tokenizer& tok, int64_t batch_size) {
  data::PadOptions pad;
  pad.pad_id = tok.pad_token_id().value_or(tok.eos_token_id().value_or(0));
  const int64_t max_length = job.max_length.value_or(plan.max_positions);
  if (job.packing && job.packing_strategy == "bfd")
    return std::make_shared<data::PaddingFreeCollator>(
        data::PaddingFreeOptions{.pad_id = pad.pad_id, .flatten = false, .buckets = {max_length}});
  if (job.padding_free)
    return std::make_shared<data::PaddingFreeCollator>(data::PaddingFreeOptions{
        .pad_id = pad.pad_id,
        .flatten = true,
        .buckets = sft_length_buckets(max_length * std::max<int64_t>(batch_size, 1))});
  if (job.pad_to_multiple_of > 0) {
    pad.pad_to_multiple_of = job.pad_to_multiple_of;
    return std::make_shared<data::PaddingCollator>(pad);
  }
  pad.strategy = data::PadOptions::Strategy::kBuckets;
  pad.buckets = sft_length_buckets(job.max_length.value_or(plan.max_positions));
  return std::make_shared<data::PaddingCollator>(pad);
}

std::shared_ptr<const data::Collator> make_collator(const JobArguments& job, const ModelPlan& plan,
                                                    const Tokenizer& tok, uint64_t seed,
                                                    int64_t batch_size) {
  data::PadOptions pad;
  pad.pad_to_multiple_of = job.pad_to_multiple_of;
  pad.pad_id = tok.pad_token_id().value_or(tok.eos_token_id().value_or(0));
  if (plan.task == kTaskCausalLM) return std::make_shared<data::CausalLMCollator>(pad);
  if (plan.task == kTaskSft) return sft_collator(job, plan, tok, batch_size);
  if (plan.task == kTaskMaskedLM) {
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

}  // namespace

Job build_job(const JobArguments& given_job, TrainingArguments& training,
              const JobOptions& options) {
  const JobArguments job = with_hub_dirs(given_job);
  const bool want_train = options.want_train;
  Job p;
  if (want_train) check_lora_arguments(job);
  p.tokenizer_dir = tokenizer_dir(job);
  Tokenizer tok = Tokenizer::from_pretrained(p.tokenizer_dir);
  p.plan = plan_model(job, tok);
  check_arguments_serve_task(job, p.plan, options.given);
  if (want_train) check_training_fits(p.plan, training);  // before reading any data
  p.data = load_job_data(job, p.plan, tok, want_train, options.want_eval);
  p.model = options.model ? options.model
                          : build_model(p.plan, p.data, static_cast<uint64_t>(training.seed));
  if (want_train) {
    // The adapter names its base as the user did: a hub id stays an id (as peft).
    ModelPlan named = p.plan;
    if (p.plan.adapter_dir.empty() && job.model_name_or_path != given_job.model_name_or_path)
      named.pretrained_dir = given_job.model_name_or_path;
    p.model = apply_lora(job, options.given, named, p.model);
  }
  p.options.data_collator = make_collator(
      job, p.plan, tok, training.sampler_seed(),
      std::max(training.per_device_train_batch_size, training.per_device_eval_batch_size));
  p.options.tokenizer_dir = p.tokenizer_dir;
  if (p.plan.task == kTaskTextClassification) {
    p.options.compute_metrics = classification_metrics;
  } else {
    p.options.compute_metrics = perplexity_metrics;
    // Gathering [N, T, vocab] logits only to take exp(loss) would not fit in memory.
    if (!options.given.count("prediction_loss_only")) training.prediction_loss_only = true;
  }
  return p;
}

}  // namespace loom
