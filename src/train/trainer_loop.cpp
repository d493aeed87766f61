// The training loop: transformers' Trainer._inner_training_loop, _run_epoch,
// training_step and _maybe_log_save_evaluate, step for step. Batches come
// from a DeviceLoader (prefetched and uploaded on a background thread, no
// mark_step of its own); the loop calls lazy::mark_step() after each
// micro-batch of a gradient accumulation window and after the optimizer
// update, so a step is GA graphs, each holding one micro-batch's
// activations (the last one also the update). The running loss is a device
// tensor read only at logging steps (and when checkpointing). A resumed
// epoch starts at the sampler: skipped batches are never loaded.
// Data parallel (train/ddp.h): each rank trains its DistributedSampler shard
// (the same batch count on every rank; the samples repeated to even out the
// shards carry ignore_index labels, so they count zero), gradients are
// all-reduced in buckets before clipping, the logged loss is the ranks' mean;
// the collectives are called by every rank in the same order, never under a
// per-rank condition. Messages that are the same on every rank come from rank 0.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "core/allocator.h"
#include "loom/autocast.h"
#include "loom/device_loader.h"
#include "loom/lazy.h"
#include "loom/metrics.h"
#include "train/checkpoint_complete.h"
#include "train/checkpoint_files.h"
#include "train/ddp.h"
#include "train/grad_buckets.h"
#include "train/scheduler_kwargs.h"
#include "train/trainer_impl.h"

namespace loom {
namespace fs = std::filesystem;

namespace {

// transformers' speed_metrics: <split>_runtime (4 decimals),
// <split>_samples_per_second and <split>_steps_per_second (3 decimals).
Logs speed_metrics(const std::string& split, double start, double num_samples, double num_steps) {
  const double runtime = now_seconds() - start;
  Logs m;
  m[split + "_runtime"] = round_to(runtime, 4);
  if (runtime == 0) return m;
  m[split + "_samples_per_second"] = round_to(num_samples / runtime, 3);
  m[split + "_steps_per_second"] = round_to(num_steps / runtime, 3);
  return m;
}

// The process's peak resident set so far (Linux VmHWM), in bytes; 0 where
// /proc/self/status cannot be read.
int64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atoll(line.c_str() + 6) * 1024;  // kB
  return 0;
}

// TrainerState.compute_steps: a ratio in (0, 1) becomes ceil(max_steps * ratio).
int64_t absolute_steps(double steps, int64_t max_steps) {
  if (steps < 1) return static_cast<int64_t>(std::ceil(max_steps * steps));
  return static_cast<int64_t>(steps);
}

// "last": the newest checkpoint that can be resumed; newer incomplete ones
// are passed over with a warning (transformers#35782).
std::string resolve_resume(const std::optional<std::string>& resume, const std::string& out) {
  if (!resume) return "";
  if (*resume != "last" && *resume != "true" && *resume != "True") return *resume;
  const train::ResumableCheckpoint last = train::last_resumable_checkpoint(out);
  LOOM_CHECK(last.path || !last.skipped.empty(), "[Trainer] resume_from_checkpoint '", *resume,
             "': no checkpoint-N directory in output_dir '", out, "'");
  std::string reasons;
  for (const auto& [dir, why] : last.skipped) {
    const std::string name = fs::path(dir).filename().string();
    reasons += (reasons.empty() ? "" : "; ") + name + ": " + why;
    if (last.path && train::is_world_process_zero())  // the same on every rank: said once
      std::fprintf(stderr,
                   "[Trainer] warning: %s is incomplete (%s); resuming from the newest complete "
                   "checkpoint, %s\n",
                   dir.c_str(), why.c_str(), fs::path(*last.path).filename().string().c_str());
  }
  LOOM_CHECK(last.path.has_value(), "[Trainer] resume_from_checkpoint '", *resume,
             "': no complete checkpoint in output_dir '", out, "' (", reasons, ")");
  return *last.path;
}

// The value of a rank-0 device scalar, averaged over the ranks (the logged
// loss: HF's nested_gather(tr_loss).mean()). Every rank calls it.
double ranks_mean(const Tensor& x) {
  return (train::ddp_world_size() > 1 ? train::all_reduce_mean(x) : x).item();
}

}  // namespace

// ---- Setup. ----

TrainPlan Trainer::Impl::plan(int64_t steps_in_epoch) const {
  const int64_t ga = args.gradient_accumulation_steps;
  TrainPlan p;
  p.steps_in_epoch = steps_in_epoch;
  p.num_update_steps_per_epoch =
      std::max<int64_t>(steps_in_epoch / ga + (steps_in_epoch % ga > 0), 1);
  p.num_examples = train_dataset->size();
  if (args.max_steps > 0) {
    p.max_steps = args.max_steps;
    p.num_train_epochs = p.max_steps / p.num_update_steps_per_epoch +
                         (p.max_steps % p.num_update_steps_per_epoch > 0);
    // transformers' total_train_batch_size: per device x accumulation x world size.
    p.num_train_samples = static_cast<double>(p.max_steps * args.per_device_train_batch_size * ga *
                                              train::ddp_world_size());
  } else {
    p.max_steps =
        static_cast<int64_t>(std::ceil(args.num_train_epochs * p.num_update_steps_per_epoch));
    p.num_train_epochs = static_cast<int64_t>(std::ceil(args.num_train_epochs));
    p.num_train_samples = p.num_examples * args.num_train_epochs;
  }
  return p;
}

void Trainer::Impl::create_optimizer_and_scheduler(int64_t max_steps) {
  auto groups = optim::weight_decay_groups(model->named_parameters(), args.weight_decay);
  // --fsdp: the optimizer updates this rank's shards (train/fsdp.h).
  if (const train::FsdpMode mode = train::parse_fsdp_mode(args.fsdp);
      mode != train::FsdpMode::off) {
    train::parse_fsdp_config(args.fsdp_config, train::fsdp_layer_class(model->architecture()));
    fsdp = std::make_unique<train::FsdpEngine>(mode, groups, train::ddp_world_size(),
                                               train::ddp_rank());
    groups = fsdp->shard_groups(groups);
    // full_shard dropped the whole parameters: let their blocks leave the
    // process rather than wait in the host's cache for a block of their size.
    if (fsdp->params_stay_pending()) lazy::empty_cache();
  }
  if (args.optim == "sgd") {
    optim::SGDOptions o;
    o.lr = args.learning_rate;
    o.weight_decay = args.weight_decay;
    optimizer = std::make_unique<optim::SGD>(std::move(groups), o);
  } else {
    optim::AdamWOptions o;
    o.lr = args.learning_rate;
    o.beta1 = args.adam_beta1;
    o.beta2 = args.adam_beta2;
    o.eps = args.adam_epsilon;
    o.weight_decay = args.weight_decay;
    optimizer = std::make_unique<optim::AdamW>(std::move(groups), o);
  }
  optim::ScheduleOptions so;
  so.num_warmup_steps = args.get_warmup_steps(max_steps);
  so.num_training_steps = max_steps;
  train::apply_lr_scheduler_kwargs(args.lr_scheduler_type, args.lr_scheduler_kwargs, so);
  scheduler = std::make_unique<optim::LRScheduler>(args.lr_scheduler_type, *optimizer, so);
}

// Before anything else: output_dir must take files (else the run would fail
// only at its first save), and the debris of an interrupted save goes — a
// checkpoint moved aside while being replaced is put back (before "last" is
// resolved), and tmp directories are removed.
static void check_and_repair_output_dir(const std::string& output_dir) {
  train::check_output_dir_writable(output_dir);
  for (const std::string& name : train::recover_replaced_checkpoints(output_dir))
    std::fprintf(stderr, "[Trainer] restored %s/%s, moved aside by a save that did not finish\n",
                 output_dir.c_str(), name.c_str());
  train::remove_stale_tmp(output_dir);
}

// A fresh run refuses (or with overwrite_output_dir removes) the checkpoints
// of an earlier run, which would otherwise mix with its own in rotation and
// "last".
static void clear_earlier_run(const TrainingArguments& args) {
  auto existing = train::sorted_checkpoints(args.output_dir);
  if (existing.empty()) return;
  LOOM_CHECK(args.overwrite_output_dir, "[Trainer] output_dir '", args.output_dir,
             "' already holds ", fs::path(existing.back()).filename().string(),
             ": set resume_from_checkpoint to \"last\" to continue, or overwrite_output_dir to "
             "start over");
  std::error_code ec;
  for (const auto& dir : existing) fs::remove_all(dir, ec);
}

// Resuming from a checkpoint that is not the newest abandons the run that
// wrote the newer ones: they are moved aside into output_dir/abandoned-<time>/
// (when this run saves checkpoints), else rotation and "last" would mix the
// two runs; nothing is deleted. Call after load_checkpoint.
static void move_abandoned_checkpoints(const TrainingArguments& args, const std::string& resume_dir,
                                       TrainerState& state) {
  if (args.save_strategy == "no") return;
  const train::AbandonedCheckpoints moved =
      train::move_checkpoints_after(args.output_dir, state.global_step, resume_dir);
  if (moved.names.empty()) return;
  std::string names;
  for (const auto& n : moved.names) names += (names.empty() ? "" : ", ") + n;
  std::fprintf(stderr,
               "[Trainer] resuming from step %lld: moved the newer checkpoints of the "
               "abandoned run (%s) to %s\n",
               static_cast<long long>(state.global_step), names.c_str(), moved.dir.c_str());
  std::error_code ec;
  if (state.best_model_checkpoint && !fs::is_directory(*state.best_model_checkpoint, ec))
    state.best_model_checkpoint.reset();
}

TrainOutput Trainer::Impl::train(std::optional<std::string> resume) {
  args.validate();
  LOOM_CHECK(train_dataset != nullptr, "[Trainer] train() needs a train_dataset");
  // As transformers' Trainer.train (docs/remat.md); never turned off here, so a model the
  // caller enabled it on keeps it.
  if (args.gradient_checkpointing) model->gradient_checkpointing_enable();
  check_same_setup_on_all_ranks();
  // Data parallel: rank 0 repairs output_dir; the others wait for it (every
  // rank calls the barrier; a rank-0 failure ends the job).
  if (train::is_world_process_zero()) check_and_repair_output_dir(args.output_dir);
  train::ddp_barrier();
  if (!resume) resume = args.resume_from_checkpoint;
  const std::string resume_dir = resolve_resume(resume, args.output_dir);
  if (resume_dir.empty() && train::is_world_process_zero()) clear_earlier_run(args);
  train::ddp_barrier();

  data::DataLoader loader = make_loader(train_dataset, args.per_device_train_batch_size, true);
  warn_unmasked_padding();
  LOOM_CHECK(loader.size() > 0, "[Trainer] train_dataset has ", train_dataset->size(),
             " examples: not one batch of per_device_train_batch_size ",
             args.per_device_train_batch_size, " (dataloader_drop_last is ",
             args.dataloader_drop_last ? "true" : "false", ")");
  const TrainPlan p = plan(loader.size());
  create_optimizer_and_scheduler(p.max_steps);

  state = TrainerState{};
  state.train_batch_size = args.per_device_train_batch_size;
  state.logging_steps = absolute_steps(args.logging_steps, p.max_steps);
  if (args.eval_steps) state.eval_steps = absolute_steps(*args.eval_steps, p.max_steps);
  state.save_steps = absolute_steps(args.save_steps, p.max_steps);
  tr_loss = zero_scalar();
  total_loss_scalar = 0;
  globalstep_last_logged = 0;
  current_flos = 0;
  ResumePoint rp;
  if (!resume_dir.empty()) {
    rp = load_checkpoint(resume_dir, p);
    if (train::is_world_process_zero()) move_abandoned_checkpoints(args, resume_dir, state);
  }
  state.max_steps = p.max_steps;
  state.num_train_epochs = p.num_train_epochs;
  initial_global_step = state.global_step;
  if (resume_dir.empty()) globalstep_last_logged = state.global_step;

  use_autocast();  // says which precision path runs, once, before the first step
  model->zero_grad();
  const double start = now_seconds();
  control.should_training_stop = false;
  each([&](TrainerCallback& c) { c.on_train_begin(args, state, control); });
  if (args.eval_on_start) evaluate(eval_dataset, "eval");

  for (int64_t epoch = rp.epochs_trained; epoch < p.num_train_epochs; ++epoch) {
    control.should_epoch_stop = false;
    each([&](TrainerCallback& c) { c.on_epoch_begin(args, state, control); });
    run_epoch(epoch, loader, p, epoch == rp.epochs_trained ? rp.batches_to_skip : 0);
    if (control.should_training_stop) break;
  }
  return finalize(p, start);
}

// Data parallel without dataloader_drop_last, n % W != 0: DistributedSampler
// repeats W - n % W samples per epoch. They are masked (count zero) where the
// loss skips ignore_index labels; otherwise they are trained, as in torch,
// which rank 0 says once.
void Trainer::Impl::warn_unmasked_padding() const {
  const int64_t world = train::ddp_world_size(), n = train_dataset->size();
  if (world == 1 || args.dataloader_drop_last || n % world == 0) return;
  if (loss_ignores_padding_labels(*model) || !train::is_world_process_zero()) return;
  std::fprintf(stderr,
               "[Trainer] warning: %lld training samples on %lld ranks: %lld repeated samples per "
               "epoch even out the shards, and %s's loss (regression or multi-label) has no "
               "ignore_index to mask them: they are trained (set dataloader_drop_last to drop "
               "the tail instead)\n",
               static_cast<long long>(n), static_cast<long long>(world),
               static_cast<long long>(world - n % world), model->architecture().c_str());
}

// ---- One epoch. ----

// The first `skip` batches of a resumed epoch (at most all of them), said
// in the log (by rank 0: every rank skips as many).
static int64_t announce_skip(int64_t skip, int64_t batches, int64_t epoch) {
  skip = std::min(skip, batches);
  if (skip > 0 && train::is_world_process_zero())
    std::fprintf(stderr, "[Trainer] skipping %lld batches of epoch %lld at the sampler\n",
                 static_cast<long long>(skip), static_cast<long long>(epoch));
  return skip;
}

// Up to `n` next batches of `stream` (fewer at the end of the epoch).
static std::vector<data::Batch> next_window(data::BatchStream& stream, int64_t n) {
  std::vector<data::Batch> window;
  for (int64_t k = 0; k < n; ++k) {
    std::optional<data::Batch> b = stream.next();
    if (!b) break;
    window.push_back(std::move(*b));
  }
  return window;
}

void Trainer::Impl::run_epoch(int64_t epoch, const data::DataLoader& loader, const TrainPlan& p,
                              int64_t skip) {
  const int64_t ga = args.gradient_accumulation_steps;
  data::DeviceLoader dl(loader, device, {.prefetch = 2, .mark_step = false});
  // transformers' skip_first_batches, on the sampler's indices: the skipped
  // batches are never fetched, collated or uploaded (transformers#8876).
  skip = announce_skip(skip, loader.size(), epoch);
  std::unique_ptr<data::BatchStream> stream = dl.stream(epoch, skip);
  int64_t step = skip - 1;
  epoch_index = epoch;
  batches_done_in_epoch = step + 1;
  Tensor grad_norm;
  double learning_rate = scheduler->get_last_lr().at(0);
  const int64_t remainder = p.steps_in_epoch % ga == 0 ? ga : p.steps_in_epoch % ga;
  bool stop = false;
  for (int64_t u = skip / ga; u < p.num_update_steps_per_epoch && !stop; ++u) {
    std::vector<data::Batch> window =
        next_window(*stream, u != p.num_update_steps_per_epoch - 1 ? ga : remainder);
    if (window.empty()) break;
    // Data parallel: all ranks' label tokens, also for a window of one (HF).
    const bool count = window.size() > 1 || train::ddp_world_size() > 1;
    const Tensor num_items = count ? count_items(window) : Tensor();
    for (size_t i = 0; i < window.size(); ++i) {
      ++step;
      if (step % ga == 0) {
        control.should_log = control.should_evaluate = control.should_save = false;
        each([&](TrainerCallback& c) { c.on_step_begin(args, state, control); });
      }
      Tensor loss = training_step(window[i], num_items, window.size());
      if (args.logging_nan_inf_filter && !device.is_lazy() && !std::isfinite(loss.item())) {
        tr_loss =
            tr_loss + tr_loss / static_cast<double>(1 + state.global_step - globalstep_last_logged);
      } else {
        tr_loss = tr_loss + loss;
      }
      if (window[i].contains("input_ids")) {
        const int64_t tokens = window[i].at("input_ids").numel();
        current_flos += 6.0 * static_cast<double>(flos_params) * tokens;
        // transformers gathers every rank's count; each rank's batch here.
        if (args.include_num_input_tokens_seen)
          state.num_input_tokens_seen += tokens * train::ddp_world_size();
      }
      if (i + 1 == window.size()) {
        batches_done_in_epoch = step + 1;
        optimizer_step(epoch, step, p, grad_norm, learning_rate);
      } else {
        // One graph per micro-batch (pytorch/xla#1367, #3593): its
        // activations are freed before the next one is traced, so memory
        // stays that of one micro-batch whatever the accumulation.
        if (device.is_lazy()) lazy::mark_step();
        each([&](TrainerCallback& c) { c.on_substep_end(args, state, control); });
      }
      if (control.should_epoch_stop || control.should_training_stop) {
        stop = true;
        break;
      }
    }
  }
  stream.reset();
  if (device.is_lazy()) lazy::mark_step();
  if (step < 0) {
    if (train::is_world_process_zero())  // every rank has as many batches
      std::fprintf(stderr, "[Trainer] warning: epoch %lld had no batch; stopping at step %lld\n",
                   static_cast<long long>(epoch), static_cast<long long>(state.global_step));
    control.should_training_stop = true;
  }
  each([&](TrainerCallback& c) { c.on_epoch_end(args, state, control); });
  maybe_log_save_evaluate(grad_norm, learning_rate);
}

Tensor Trainer::Impl::count_items(const std::vector<data::Batch>& window) const {
  Tensor total;
  for (const data::Batch& b : window) {
    if (!b.contains("labels")) return Tensor();
    Tensor labels = b.at("labels");
    if (shifts_labels && labels.dim() >= 2) labels = slice(labels, 1, 1, labels.size(1));
    Tensor c = cast(sum(ne(labels, -100.0)), DType::f32);
    total = total.defined() ? total + c : c;
  }
  return train::ddp_world_size() > 1 ? train::all_reduce_sum(total) : total;
}

Tensor Trainer::Impl::training_step(const data::Batch& batch, const Tensor& num_items,
                                    size_t window) {
  model->train();
  ModelInputs in = to_inputs(batch);
  Tensor loss;
  {
    AutocastGuard amp(use_autocast());
    loss = self->compute_loss(*model, in, num_items);
  }
  // Without item counts, each micro-batch's mean counts 1 / window (transformers).
  if (!num_items.defined() && window > 1) loss = loss / static_cast<double>(window);
  // Data parallel: this rank's summed loss over ALL ranks' items, times the
  // world size, so that the gradients' mean over the ranks is the one-process
  // gradient (transformers: loss *= num_processes with num_items_in_batch).
  const int64_t world = train::ddp_world_size();
  if (num_items.defined() && world > 1) loss = loss * static_cast<double>(world);
  loss.backward();
  return loss.detach();
}

void Trainer::Impl::optimizer_step(int64_t epoch, int64_t step, const TrainPlan& p,
                                   Tensor& grad_norm, double& learning_rate) {
  std::vector<Tensor> params;
  for (const Tensor& t : model->parameters())
    if (t.requires_grad()) params.push_back(t);
  const double max_norm =
      args.max_grad_norm > 0 ? args.max_grad_norm : std::numeric_limits<double>::infinity();
  if (fsdp) {  // --fsdp: reduce-scattered into the shards, clipped by the global norm
    fsdp->reduce_scatter_grads();
    grad_norm = fsdp->clip_grad_norm(max_norm);
  } else {
    // Data parallel: gradients are reduced before clipping, in the step graph
    // (xm.optimizer_step), one all_reduce(mean) per bucket (train/grad_buckets.h).
    if (train::ddp_world_size() > 1)
      train::all_reduce_gradients(params, args.ddp_bucket_cap_mb, train::all_reduce_mean);
    grad_norm = optim::clip_grad_norm_(params, max_norm);
  }
  each([&](TrainerCallback& c) { c.on_pre_optimizer_step(args, state, control); });
  optimizer->step();
  if (!start_up_blocks_released) {  // the moments' host zeros, uploaded: not needed again
    release_host_cache();
    start_up_blocks_released = true;
  }
  each([&](TrainerCallback& c) { c.on_optimizer_step(args, state, control); });
  // full_shard on the lazy device: a pending recipe (params_stay_pending),
  // traced before the cut so that it reads the updated shards and no longer
  // holds the old ones, which the step then donates to the new.
  if (fsdp) fsdp->gather_params();
  learning_rate = scheduler->get_last_lr().at(0);  // the rate this step used
  scheduler->step();
  model->zero_grad();
  if (fsdp) fsdp->zero_grad();
  if (device.is_lazy()) lazy::mark_step();
  state.global_step += 1;
  // Wall time between two optimizer steps' ends: in steady state the step
  // time (the executor runs one graph while the next is traced).
  const double now = now_seconds();
  if (last_step_end >= 0)
    metrics::add_time("TrainStepTime", static_cast<int64_t>((now - last_step_end) * 1e9));
  last_step_end = now;
  state.epoch = static_cast<double>(epoch) + static_cast<double>(step + 1) / p.steps_in_epoch;
  each([&](TrainerCallback& c) { c.on_step_end(args, state, control); });
  maybe_log_save_evaluate(grad_norm, learning_rate);
}

void Trainer::Impl::maybe_log_save_evaluate(const Tensor& grad_norm, double learning_rate) {
  if (control.should_log && state.global_step > globalstep_last_logged) {
    const double tr = ranks_mean(tr_loss);
    tr_loss = zero_scalar();
    Logs logs;
    logs["loss"] = tr / static_cast<double>(state.global_step - globalstep_last_logged);
    if (grad_norm.defined()) logs["grad_norm"] = grad_norm.item();
    logs["learning_rate"] = learning_rate;
    total_loss_scalar += tr;
    globalstep_last_logged = state.global_step;
    store_flos();
    log(std::move(logs));
  }
  if (control.should_evaluate) {
    Logs metrics = evaluate(eval_dataset, "eval");
    const bool new_best = determine_best_metric(metrics);
    if (args.save_strategy == "best") control.should_save = new_best;
  }
  if (control.should_save) {
    save_checkpoint();
    control.should_save = false;
    each([&](TrainerCallback& c) { c.on_save(args, state, control); });
  }
}

// ---- The end (transformers' _finalize_training). ----

TrainOutput Trainer::Impl::finalize(const TrainPlan& p, double start) {
  if (device.is_lazy()) lazy::mark_step();
  // The training loop's memory high-water mark, before the end's gathers and
  // the final save add theirs (lazy_metrics.json; bench/fsdp_step.sh reads it).
  // After the queued steps ran; a maximum over train() calls, not a sum.
  if (device.is_lazy()) lazy::wait();
  const int64_t peak = peak_rss_bytes(), before = metrics::counter("TrainPeakRssBytes");
  if (peak > before) metrics::add_counter("TrainPeakRssBytes", peak - before);
  if (fsdp) fsdp->materialize_params();  // every rank: rank 0 then saves them alone
  total_loss_scalar += ranks_mean(tr_loss);
  tr_loss = zero_scalar();
  const int64_t steps_this_call = state.global_step - initial_global_step;
  // Over the whole run (a resumed run restores the sum of the earlier steps).
  const double train_loss = total_loss_scalar / std::max<double>(state.global_step, 0.001);
  Logs metrics = speed_metrics(
      "train", start, p.num_train_samples * steps_this_call / std::max<int64_t>(state.max_steps, 1),
      static_cast<double>(steps_this_call));
  store_flos();
  metrics["total_flos"] = state.total_flos;
  metrics["train_loss"] = train_loss;
  metrics = log(std::move(metrics));

  if (args.load_best_model_at_end && state.best_model_checkpoint) load_best_model();
  const bool zero = train::is_world_process_zero();
  if (zero && state.best_model_checkpoint && args.save_total_limit.value_or(0) == 1) {
    std::error_code ec;
    for (const auto& dir : train::sorted_checkpoints(args.output_dir))
      if (!train::same_dir(dir, *state.best_model_checkpoint)) fs::remove_all(dir, ec);
  }
  each([&](TrainerCallback& c) { c.on_train_end(args, state, control); });
  if (zero) {
    train::create_dir(args.output_dir, "[Trainer] output_dir");
    train::write_text_file((fs::path(args.output_dir) / "lazy_metrics.json").string(),
                           metrics::report_json());
  }
  TrainOutput out;
  out.global_step = state.global_step;
  out.training_loss = train_loss;
  out.metrics = metrics;
  return out;
}

}  // namespace loom
