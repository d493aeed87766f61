// Writing a checkpoint (transformers' Trainer._save_checkpoint): the model,
// config and tokenizer files, optimizer.safetensors, scheduler.json,
// rng_state.json, trainer_state.json and training_args.json go into
// output_dir/tmp-checkpoint-<step>, which is fsynced and renamed to
// checkpoint-<step>; then old checkpoints are rotated out (never the one
// just written). A save that fails removes its tmp-checkpoint-<step>.
// Also save_model's
// file writing. Assumes the lazy step was cut (mark_step) before a save, so
// reading the running loss does not trace an extra graph.
#include <unistd.h>

#include <filesystem>

#include "loom/lazy.h"
#include "train/checkpoint_files.h"
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
    optimizer->save((tmp / "optimizer.safetensors").string());
    train::checkpoint_file_written("optimizer.safetensors");
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
  }
  for (const auto& cb : callbacks)
    if (auto s = cb->state_json()) state.stateful_callbacks[cb->name()] = *s;
  state.stateful_callbacks["TrainerControl"] = control.state_json();
  train::write_text_file((tmp / "trainer_state.json").string(), state.to_json());
  train::checkpoint_file_written("trainer_state.json");
  train::write_text_file((tmp / "training_args.json").string(), args.to_json());
  train::checkpoint_file_written("training_args.json");
}

void Trainer::Impl::save_checkpoint() {
  store_flos();
  const fs::path out = args.output_dir;
  const std::string name = train::kCheckpointPrefix + std::to_string(state.global_step);
  const fs::path final_dir = out / name;
  const fs::path tmp = out / (train::kTmpCheckpointPrefix + std::to_string(state.global_step));
  train::create_dir(out.string(), "[checkpoint] output_dir");
  std::error_code ec;
  fs::remove_all(tmp, ec);

  // transformers: the best checkpoint is recorded once its directory exists
  // (here: it is the one being written, or an earlier one still on disk).
  if (state.best_global_step && *state.best_global_step != 0) {
    const fs::path best =
        out / (train::kCheckpointPrefix + std::to_string(*state.best_global_step));
    if (*state.best_global_step == state.global_step || fs::exists(best, ec))
      state.best_model_checkpoint = best.string();
  }

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
