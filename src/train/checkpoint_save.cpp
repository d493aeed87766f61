// Writing a checkpoint (transformers' Trainer._save_checkpoint): the model,
// config and tokenizer files, optimizer.safetensors, scheduler.json,
// rng_state.json, trainer_state.json and training_args.json go into
// output_dir/tmp-checkpoint-<step>, which is fsynced and renamed to
// checkpoint-<step>; then old checkpoints are rotated out (never the one
// just written). A save that fails removes its tmp-checkpoint-<step>.
// Data parallel: only rank 0 writes; rng_state_<rank>.json holds each rank's.
// Also save_model's
// file writing. Assumes the lazy step was cut (mark_step) before a save, so
// reading the running loss does not trace an extra graph.
#include <unistd.h>

#include <filesystem>

#include "loom/lazy.h"
#include "train/checkpoint_files.h"
#include "train/ddp.h"
#include "train/fsdp_checkpoint.h"
#include "train/trainer_impl.h"

namespace loom {
namespace fs = std::filesystem;

void Trainer::Impl::write_model_files(const std::string& dir) const {
  std::error_code ec;
  const bool fresh = !fs::exists(dir, ec);
  if (fresh) {
    model->save_pretrained(dir);
  } else {
    // save_pretrained replaces a whole directory; write into a private one
    // inside `dir` and move the files up, leaving other contents (checkpoints) alone.
    const fs::path tmp = fs::path(dir) / ("tmp-model-" + std::to_string(::getpid()));
    fs::remove_all(tmp, ec);
    model->save_pretrained(tmp.string());
    for (const std::string& name : train::list_dir(tmp.string())) {
      fs::rename(tmp / name, fs::path(dir) / name, ec);
      LOOM_CHECK(!ec, "[save_model] ", dir, ": cannot move ", name, " into place (", ec.message(),
                 ")");
    }
    fs::remove_all(tmp, ec);
  }
  train::checkpoint_file_written("model.safetensors");
  if (!options.tokenizer_dir.empty()) {
    train::copy_tokenizer_files(options.tokenizer_dir, dir);
    train::checkpoint_file_written("tokenizer");
  }
}

// Every file of a checkpoint into `tmp` (not yet renamed into place).
void Trainer::Impl::write_checkpoint_files(const std::string& tmp_dir) {
  const fs::path tmp = tmp_dir;
  write_model_files(tmp.string());
  if (!args.save_only_model) {
    if (fsdp) {  // every rank wrote its optimizer_shard_<rank> already (save_checkpoint)
      train::write_text_file((tmp / train::kFsdpIndexFile).string(), fsdp->index_json());
      train::checkpoint_file_written(train::kFsdpIndexFile);
    } else {
      optimizer->save((tmp / "optimizer.safetensors").string());
      train::checkpoint_file_written("optimizer.safetensors");
    }
    scheduler->save((tmp / "scheduler.json").string());
    train::checkpoint_file_written("scheduler.json");
    train::RngState r;
    r.generator = generator_state();
    r.sampler_seed = args.sampler_seed();
    r.epoch = epoch_index;
    r.batches_in_epoch = batches_done_in_epoch;
    r.tr_loss = tr_loss.item();
    r.globalstep_last_logged = globalstep_last_logged;
    r.total_loss_scalar = total_loss_scalar;
    train::write_text_file((tmp / "rng_state.json").string(), train::rng_state_json(r));
    train::checkpoint_file_written("rng_state.json");
    // Data parallel: every rank's state as rng_state_<rank>.json (HF's
    // rng_state_{process_index}.pth); rng_state.json is rank 0's.
    for (size_t k = 0; k < rank_rng_states.size() && rank_rng_states.size() > 1; ++k)
      train::write_text_file((tmp / ("rng_state_" + std::to_string(k) + ".json")).string(),
                             rank_rng_states[k]);
  }
  for (const auto& cb : callbacks)
    if (auto s = cb->state_json()) state.stateful_callbacks[cb->name()] = *s;
  state.stateful_callbacks["TrainerControl"] = control.state_json();
  train::write_text_file((tmp / "trainer_state.json").string(), state.to_json());
  train::checkpoint_file_written("trainer_state.json");
  train::write_text_file((tmp / "training_args.json").string(), args.to_json());
  train::checkpoint_file_written("training_args.json");
}

// Data parallel: the collectives of a save, called by every rank (a save is
// decided from the global step, the same on all ranks). The running loss
// becomes the ranks' mean on every rank — the logged mean is unchanged, and
// a run resumed on any number of ranks logs it right — and each rank's
// rng_state JSON is gathered for rank 0 to write.
void Trainer::Impl::gather_rank_states() {
  rank_rng_states.clear();
  if (train::ddp_world_size() == 1 || args.save_only_model) return;
  tr_loss = train::all_reduce_mean(tr_loss);
  train::RngState r;
  r.generator = generator_state();
  r.sampler_seed = args.sampler_seed();
  r.epoch = epoch_index;
  r.batches_in_epoch = batches_done_in_epoch;
  r.tr_loss = tr_loss.item();
  r.globalstep_last_logged = globalstep_last_logged;
  r.total_loss_scalar = total_loss_scalar;
  rank_rng_states = train::host_all_gather(train::rng_state_json(r));
}

// --fsdp: every rank writes optimizer_shard_<rank>.safetensors into the
// checkpoint's tmp directory, which rank 0 made fresh: barrier, write,
// barrier (rank 0 then writes the rest and renames it into place). A rank
// whose write fails throws, which ends the job; the tmp directory is debris
// the next start removes, the earlier checkpoints stay whole.
void Trainer::Impl::write_optimizer_shard(const std::string& tmp_dir) {
  std::error_code ec;
  if (train::is_world_process_zero()) {
    train::create_dir(args.output_dir, "[checkpoint] output_dir");
    fs::remove_all(tmp_dir, ec);
    train::create_dir(tmp_dir, "[checkpoint] tmp");
  }
  train::ddp_barrier();
  const int64_t rank = train::ddp_rank();
  optimizer->save((fs::path(tmp_dir) / train::fsdp_shard_file(rank)).string(),
                  train::fsdp_shard_identity(rank, train::ddp_world_size(), state.global_step));
  train::ddp_barrier();
  if (train::is_world_process_zero()) train::checkpoint_file_written("optimizer shards");
}

void Trainer::Impl::save_checkpoint() {
  store_flos();
  gather_rank_states();
  const fs::path out = args.output_dir;
  const std::string name = train::kCheckpointPrefix + std::to_string(state.global_step);
  const fs::path final_dir = out / name;
  const fs::path tmp = out / (train::kTmpCheckpointPrefix + std::to_string(state.global_step));
  std::error_code ec;

  // transformers: the best checkpoint is recorded once its directory exists
  // (here: it is the one being written, or an earlier one still on disk).
  if (state.best_global_step && *state.best_global_step != 0) {
    const fs::path best =
        out / (train::kCheckpointPrefix + std::to_string(*state.best_global_step));
    if (*state.best_global_step == state.global_step || fs::exists(best, ec))
      state.best_model_checkpoint = best.string();
  }
  if (fsdp) fsdp->materialize_params();  // full_shard: whole weights for rank 0's model file
  const bool shards = fsdp && !args.save_only_model;
  if (shards) write_optimizer_shard(tmp.string());
  // Rank 0 saves (xm.save); the others keep the same state and go on. Saving
  // holds no collective (but the shards' barriers above), so a rank-0 failure
  // here (disk full) cannot leave the others waiting in one: it ends the job
  // (dist's fault handling).
  if (!train::is_world_process_zero()) return;
  train::create_dir(out.string(), "[checkpoint] output_dir");
  if (!shards) fs::remove_all(tmp, ec);

  // A failed save (disk full, I/O error) takes its partial directory with
  // it, so a full disk is not left fuller; the error goes on to the caller.
  try {
    write_checkpoint_files(tmp.string());
    train::commit_dir(tmp.string(), final_dir.string());
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  // The checkpoint just written is protected too: when newer directories are
  // present it is not the newest.
  train::rotate_checkpoints(out.string(), args.save_total_limit.value_or(0),
                            state.best_model_checkpoint, final_dir.string());
}

}  // namespace loom
