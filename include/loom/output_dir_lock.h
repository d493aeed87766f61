// OutputDirLock: one training run per output_dir at a time. Two runs writing
// checkpoint-N and rotating each other's checkpoints would damage both, so
// `loom train` takes this lock before loading anything. Also the check that
// an output_dir is writable, run before a job starts.
//
// The lock is the file <output_dir>/.loom.lock holding the owner's pid,
// locked with flock(2) for as long as the owner lives: the kernel drops a
// flock when its process exits or is killed, so a lock file left behind by
// a crash ("stale": present but not flock-ed) is detected exactly, even if
// its pid has been reused, and is taken over with a warning. On release the
// file is removed while still locked; an acquirer that opened the old file
// meanwhile notices (its open file is no longer the path's) and retries.
// save_pretrained into output_dir (the final save_model) swaps the whole
// directory; it hard-links "*.lock" files into the new one, so the lock —
// held on the inode — survives the swap.
// Assumes a local POSIX file system (flock on NFS may be a no-op).
#pragma once

#include <string>
#include <vector>

namespace loom::train {

/// Name of the lock file inside output_dir.
inline constexpr const char* kOutputDirLockFile = ".loom.lock";

class OutputDirLock {
 public:
  /// Creates `output_dir` if needed and locks it. Throws loom::Error
  /// "[<who>] output_dir '<dir>' is in use by another run (pid N, lock file
  /// <dir>/.loom.lock)" while another live process holds it, or when the
  /// lock file cannot be created. A stale lock file (its process gone) is
  /// taken over, with "warning: ... taking over the stale lock of pid N" on
  /// stderr.
  OutputDirLock(const std::string& output_dir, const std::string& who);
  /// Removes the lock file and releases the lock; then removes the folders the
  /// constructor created (output_dir and missing parents) if they are empty, so
  /// a run that failed before writing anything leaves no empty output_dir.
  ~OutputDirLock();
  OutputDirLock(const OutputDirLock&) = delete;
  OutputDirLock& operator=(const OutputDirLock&) = delete;

  const std::string& path() const { return path_; }

 private:
  void remove_created_dirs();

  std::string path_;
  int fd_ = -1;
  std::vector<std::string> created_dirs_;  ///< deepest first
};

/// Creates `output_dir` if missing, then writes and removes a probe file in
/// it, so that an unusable output_dir fails before training rather than at
/// the first save. Throws loom::Error
/// "[TrainingArguments] output_dir '<dir>': <reason>". (Implemented in
/// src/train/checkpoint_files.cpp.)
void check_output_dir_writable(const std::string& output_dir);

}  // namespace loom::train
