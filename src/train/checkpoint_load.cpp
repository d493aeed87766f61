// Resuming from a checkpoint (transformers' _init_training_state,
// _load_from_checkpoint, _load_optimizer_and_scheduler, _load_rng_state) and
// load_best_model_at_end. Beyond transformers, the running loss since the
// last log and the generator state are restored too, so a resumed run logs
// the same losses as an uninterrupted one.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "train/checkpoint_files.h"
#include "train/ddp.h"
#include "train/fsdp_checkpoint.h"
#include "train/trainer_impl.h"

namespace loom {
namespace fs = std::filesystem;

namespace {

void require_file(const fs::path& dir, const std::string& name, bool save_only_model_hint) {
  std::error_code ec;
  if (fs::is_regular_file(dir / name, ec)) return;
  if (save_only_model_hint)
    fail("[Trainer] checkpoint ", dir.string(), " has no ", name,
         " (saved with save_only_model? such checkpoints cannot be resumed)");
  fail("[Trainer] checkpoint ", dir.string(), " has no ", name);
}

// A --fsdp run resumes a --fsdp checkpoint (sharded optimizer state), any
// other run a whole one (docs/distributed.md, "Checkpoints").
void require_same_sharding(const fs::path& d, bool fsdp) {
  std::error_code ec;
  const bool sharded = fs::is_regular_file(d / train::kFsdpIndexFile, ec);
  const bool whole = fs::is_regular_file(d / "optimizer.safetensors", ec);
  if (fsdp && whole && !sharded)
    fail("[Trainer] checkpoint ", d.string(),
         " was saved without --fsdp (it holds optimizer.safetensors, not ", train::kFsdpIndexFile,
         "): resume it without --fsdp");
  if (!fsdp && sharded && !whole)
    fail("[Trainer] checkpoint ", d.string(), " was saved with --fsdp (", train::kFsdpIndexFile,
         " and one optimizer shard per rank): resume it with --fsdp, on any number of ranks "
         "(1 included)");
}

// Ranks that wrote checkpoint `d`: its rng_state_<k>.json files (1 when none).
int64_t checkpoint_world_size(const fs::path& d) {
  int64_t n = 0;
  std::error_code ec;
  while (fs::is_regular_file(d / ("rng_state_" + std::to_string(n) + ".json"), ec)) ++n;
  return std::max<int64_t>(n, 1);
}

// Data parallel: this rank's rng_state_<rank>.json; rng_state.json (rank
// 0's) when the checkpoint was written by fewer ranks or by one (a warning).
fs::path rank_rng_file(const fs::path& d) {
  const int64_t rank = train::ddp_rank();
  if (train::ddp_world_size() == 1) return d / "rng_state.json";
  const fs::path mine = d / ("rng_state_" + std::to_string(rank) + ".json");
  std::error_code ec;
  if (fs::is_regular_file(mine, ec)) return mine;
  // Only this rank lacks its file: it says so itself, prefixed with its rank.
  std::fprintf(stderr,
               "[Trainer] warning: [rank %lld] %s has no %s (saved with another world size?): "
               "starting from rank 0's state; the data order does not continue exactly\n",
               static_cast<long long>(rank), d.string().c_str(), mine.filename().c_str());
  return d / "rng_state.json";
}

}  // namespace

ResumePoint Trainer::Impl::load_checkpoint(const std::string& dir, const TrainPlan& plan) {
  const fs::path d = dir;
  std::error_code ec;
  LOOM_CHECK(fs::is_directory(d, ec), "[Trainer] resume_from_checkpoint: '", dir,
             "' is not a directory");
  require_file(d, "trainer_state.json", false);
  const std::string weights = model->saved_weights_file();
  if (weights != "model.safetensors") {
    require_file(d, weights, false);  // a PEFT adapter (loom/lora.h)
  } else if (!fs::is_regular_file(d / "model.safetensors", ec)) {
    require_file(d, "model.safetensors.index.json", false);
  }
  require_same_sharding(d, fsdp != nullptr);
  for (const char* f :
       {fsdp ? train::kFsdpIndexFile : "optimizer.safetensors", "scheduler.json", "rng_state.json"})
    require_file(d, f, true);

  const std::string state_file = (d / "trainer_state.json").string();
  TrainerState loaded = TrainerState::from_json_file(state_file);
  // Every trainer_state.json (transformers' or loom's) has global_step; a file
  // without it is another one, and the resume would start silently at step 0.
  const nlohmann::json state_json =
      nlohmann::json::parse(train::read_text_file(state_file), nullptr, false);
  LOOM_CHECK(state_json.is_object() && state_json.contains("global_step"), "[Trainer] ", state_file,
             ": no global_step (not a trainer_state.json)");
  // Warnings about the checkpoint itself are the same on every rank: rank 0's.
  const bool zero = train::is_world_process_zero();
  if (loaded.best_model_checkpoint && !fs::is_directory(*loaded.best_model_checkpoint, ec)) {
    if (zero)
      std::fprintf(stderr,
                   "[Trainer] warning: the best checkpoint %s recorded in %s no longer "
                   "exists; ignoring it\n",
                   loaded.best_model_checkpoint->c_str(), dir.c_str());
    loaded.best_model_checkpoint.reset();
  }
  // The global batch (per device x ranks) decides the data order: the ranks'
  // shards interleave one permutation, so 2 ranks x 4 continue as 1 x 8.
  const int64_t saved_world = checkpoint_world_size(d);
  const int64_t world = train::ddp_world_size();
  if (zero && loaded.train_batch_size &&
      *loaded.train_batch_size * saved_world != args.per_device_train_batch_size * world)
    std::fprintf(stderr,
                 "[Trainer] warning: %s was trained with batch size %lld on %lld rank(s), this "
                 "run uses %lld on %lld; the data order will not continue exactly\n",
                 dir.c_str(), static_cast<long long>(*loaded.train_batch_size),
                 static_cast<long long>(saved_world),
                 static_cast<long long>(args.per_device_train_batch_size),
                 static_cast<long long>(world));
  const auto stateful = loaded.stateful_callbacks;
  state.epoch = loaded.epoch;
  state.global_step = loaded.global_step;
  state.total_flos = loaded.total_flos;
  state.num_input_tokens_seen = loaded.num_input_tokens_seen;
  state.log_history = std::move(loaded.log_history);
  state.best_metric = loaded.best_metric;
  state.best_global_step = loaded.best_global_step;
  state.best_model_checkpoint = loaded.best_model_checkpoint;
  if (args.restore_callback_states_from_checkpoint)
    for (auto& cb : callbacks)
      if (auto it = stateful.find(cb->name()); it != stateful.end())
        cb->load_state_json(it->second);

  PretrainedOptions popt;
  popt.strict = true;
  popt.warn = false;
  try {
    model->load_saved_weights(dir, device, popt);
  } catch (const Error& e) {  // name the file: the directory alone does not say which
    fail(e.what(), " (loading ", (d / weights).string(), ")");
  }
  if (fsdp) {  // the shards from the loaded weights, then this rank's (re-sharded) state
    fsdp->load_shards_from_params();
    train::load_fsdp_optimizer(dir, *fsdp, *optimizer, state.global_step);
  } else {
    optimizer->load((d / "optimizer.safetensors").string());
  }
  scheduler->load((d / "scheduler.json").string());
  const fs::path rng_file = rank_rng_file(d);
  const train::RngState r =
      train::parse_rng_state(train::read_text_file(rng_file.string()), rng_file.string());
  if (zero && r.sampler_seed != args.sampler_seed())
    std::fprintf(stderr, "[Trainer] warning: %s shuffled with seed %llu, this run uses %llu\n",
                 dir.c_str(), static_cast<unsigned long long>(r.sampler_seed),
                 static_cast<unsigned long long>(args.sampler_seed()));
  set_generator_state(r.generator);
  tr_loss = scalar_tensor(r.tr_loss, DType::f32, device);
  globalstep_last_logged = r.globalstep_last_logged;
  total_loss_scalar = r.total_loss_scalar;

  ResumePoint p;
  p.dir = dir;
  p.epochs_trained = state.global_step / plan.num_update_steps_per_epoch;
  if (!args.ignore_data_skip)
    p.batches_to_skip =
        (state.global_step % plan.num_update_steps_per_epoch) * args.gradient_accumulation_steps;
  return p;
}

void Trainer::Impl::load_best_model() {
  const std::string& dir = *state.best_model_checkpoint;
  if (train::is_world_process_zero())  // every rank loads it; one says so
    std::fprintf(stderr, "[Trainer] loading best model from %s (score: %g)\n", dir.c_str(),
                 state.best_metric.value_or(0.0));
  PretrainedOptions popt;
  popt.strict = true;
  popt.warn = false;
  model->load_saved_weights(dir, device, popt);
}

}  // namespace loom
