// Checkpoint directories on disk, below the Trainer: durable file writes
// (write + fsync), the tmp-dir-then-rename commit, finding and ordering
// checkpoint-<N> directories, save_total_limit rotation that keeps the newest,
// the best and the one just written, recovery from a save interrupted while
// replacing a checkpoint, the output_dir write check, tokenizer file copies,
// and rng_state.json. Knows nothing of models or tensors. Assumes POSIX
// rename/fsync semantics (rename of a directory within one file system is
// atomic). File system failures become loom::Error naming the path, never
// std::filesystem::filesystem_error.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loom/tensor.h"

#include "loom/output_dir_lock.h"  // check_output_dir_writable

namespace loom::train {

inline constexpr const char* kCheckpointPrefix = "checkpoint-";
inline constexpr const char* kTmpCheckpointPrefix = "tmp-checkpoint-";
/// Folder of output_dir holding an abandoned run's newer checkpoints.
inline constexpr const char* kAbandonedPrefix = "abandoned-";

/// Writes `text` to `path` (truncating) and fsyncs it. Throws loom::Error
/// "[checkpoint] <path>: ..." with the system's reason on failure.
void write_text_file(const std::string& path, const std::string& text);
/// Reads a whole file; loom::Error "[checkpoint] <path>: cannot open file".
std::string read_text_file(const std::string& path);
/// fsyncs every regular file in `dir` (not recursive) and `dir` itself.
void fsync_dir_tree(const std::string& dir);
/// The entries of directory `dir` (not recursive). Throws loom::Error
/// "[checkpoint] <dir>: cannot list directory (<reason>)".
std::vector<std::string> list_dir(const std::string& dir);
/// Creates `dir` and its parents if missing. Throws loom::Error
/// "<who> <dir>: cannot create directory (<reason>)", e.g. when a parent is a
/// regular file or not writable.
void create_dir(const std::string& dir, const std::string& who);
// check_output_dir_writable: loom/output_dir_lock.h.

/// The step N of a directory name "checkpoint-<N>", or nullopt.
std::optional<int64_t> checkpoint_step(const std::string& name);
/// checkpoint-<N> directories of `output_dir` (paths output_dir/checkpoint-N),
/// oldest first by N; with `best`, that checkpoint is moved to the
/// second-to-last place unless it is the newest (transformers'
/// sort_checkpoints). Empty when output_dir does not exist.
std::vector<std::string> sorted_checkpoints(const std::string& output_dir,
                                            const std::optional<std::string>& best = std::nullopt);
/// Deletes the oldest checkpoints until at most `limit` remain, never the
/// newest, `best`, nor `just_saved` (the checkpoint this save wrote, which is
/// not the newest when newer directories of another run are present).
/// transformers' rotate_checkpoints, plus the `just_saved` guard. No-op for
/// limit <= 0.
void rotate_checkpoints(const std::string& output_dir, int64_t limit,
                        const std::optional<std::string>& best,
                        const std::optional<std::string>& just_saved = std::nullopt);
/// Where move_checkpoints_after put an abandoned run's checkpoints: `dir`
/// (output_dir/abandoned-<UTC time>, empty when nothing moved) and the
/// names moved there, oldest first.
struct AbandonedCheckpoints {
  std::string dir;
  std::vector<std::string> names;
};
/// Moves the checkpoint-<N> directories of `output_dir` with N > `step`,
/// except `keep` (when it is one of them), into a new directory
/// output_dir/abandoned-<YYYYmmddTHHMMSSZ> (suffixed "-2", ... when taken),
/// keeping their names. Used when a run resumes from a checkpoint that is not
/// the newest: the newer ones belong to the abandoned run, and rotation and
/// "last" look only at output_dir's own checkpoint-<N> entries, so they no
/// longer see them, while nothing is lost. Throws loom::Error
/// "[checkpoint] <dir>: cannot move to ..." when a rename fails.
AbandonedCheckpoints move_checkpoints_after(const std::string& output_dir, int64_t step,
                                            const std::string& keep);
/// Repairs a save interrupted inside commit_dir: a "checkpoint-<N>.old-<pid>"
/// directory (a complete checkpoint moved aside) is renamed back to
/// checkpoint-<N> when that is missing, and removed when checkpoint-<N>
/// exists. Returns the names restored. Throws loom::Error when output_dir
/// cannot be listed or a rename fails.
std::vector<std::string> recover_replaced_checkpoints(const std::string& output_dir);
/// Removes leftover tmp-checkpoint-* directories (and save_pretrained's
/// ".tmp-checkpoint-*.tmp-*" siblings) from a save that did not finish.
void remove_stale_tmp(const std::string& output_dir);
/// True when `a` and `b` name the same directory (by file identity when both
/// exist, else by normalized path).
bool same_dir(const std::string& a, const std::string& b);

/// The tokenizer files transformers' save_pretrained writes.
const std::vector<std::string>& tokenizer_file_names();
/// Copies the tokenizer files present in `src` into `dst`.
void copy_tokenizer_files(const std::string& src, const std::string& dst);

/// Renames the complete `tmp` directory to `final_dir` after fsyncing its
/// files, replacing an existing `final_dir` (moved aside to
/// "<final_dir>.old-<pid>" first, removed after), then fsyncs the parent. A
/// failure leaves `final_dir` as it was; a crash between the two renames
/// leaves the old one in "<final_dir>.old-<pid>", which
/// recover_replaced_checkpoints puts back. Throws loom::Error "[checkpoint] ...".
void commit_dir(const std::string& tmp, const std::string& final_dir);

/// rng_state.json: what resuming needs beyond the weights, optimizer and
/// schedule — loom's generator, the data position, and the running loss
/// since the last log (so logged losses continue exactly).
struct RngState {
  GeneratorState generator;
  uint64_t sampler_seed = 0;
  int64_t epoch = 0;             ///< index of the epoch in progress
  int64_t batches_in_epoch = 0;  ///< micro-batches of that epoch already trained
  double tr_loss = 0;            ///< sum of step losses since the last log (f32 value)
  int64_t globalstep_last_logged = 0;
  double total_loss_scalar = 0;
};
std::string rng_state_json(const RngState& s);
/// Parses rng_state.json; loom::Error "[checkpoint] <where>: ..." when malformed.
RngState parse_rng_state(const std::string& text, const std::string& where);

/// Calls the test hook (see loom::detail::set_checkpoint_file_hook).
void checkpoint_file_written(const std::string& file);

}  // namespace loom::train
