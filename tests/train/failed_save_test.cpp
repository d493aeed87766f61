// A checkpoint save that fails part way (disk full, file too large) removes
// its tmp-checkpoint-N, so the full disk is not left fuller, leaves the
// earlier checkpoints whole and resumable, and ends train() with the
// loom::Error naming the file and the system's reason. Two real write
// failures: RLIMIT_FSIZE (EFBIG, works for any user; SIGXFSZ ignored
// meanwhile) and a tiny tmpfs (ENOSPC; skipped where mounting is not
// permitted). Assumes Linux.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/error_of.h"
#include "train/train_test_util.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

TrainingArguments saving_args(const std::string& dir, int64_t max_steps) {
  TrainingArguments args = testing::quiet_args(dir);
  args.max_steps = max_steps;
  args.per_device_train_batch_size = 4;
  args.save_strategy = "steps";
  args.save_steps = 1;
  return args;
}

void train(const TrainingArguments& args, std::optional<std::string> resume = std::nullopt) {
  Trainer t(testing::tiny_gpt2(1), args, testing::token_dataset(16));
  testing::silence(t);
  t.train(resume);
}

std::vector<std::string> names_starting(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) == 0 || n.find(".tmp") != std::string::npos) out.push_back(n);
  }
  return out;
}

// Bytes of the model and optimizer files of one checkpoint of this setup.
std::pair<uintmax_t, uintmax_t> checkpoint_file_sizes() {
  testing::TempDir dir;
  train(saving_args(dir.path(), 1));
  return {fs::file_size(dir.sub("checkpoint-1/model.safetensors")),
          fs::file_size(dir.sub("checkpoint-1/optimizer.safetensors"))};
}

// Limits the size of any file this process writes; restores on destruction.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = ::signal(SIGXFSZ, SIG_IGN);
    rlimit r = saved_;
    r.rlim_cur = bytes;
    ok_ = ::setrlimit(RLIMIT_FSIZE, &r) == 0;
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    ::signal(SIGXFSZ, old_handler_);
  }
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  sighandler_t old_handler_ = SIG_DFL;
  bool ok_ = false;
};

TEST(TrainerFailedSave, FileTooLargeRemovesTheTmpCheckpoint) {
  const auto [model_bytes, optimizer_bytes] = checkpoint_file_sizes();
  ASSERT_GT(optimizer_bytes, model_bytes + 4096);
  testing::TempDir dir;
  train(saving_args(dir.path(), 2));
  std::string err;
  {
    // The model file fits, the optimizer state does not.
    FileSizeLimit limit((model_bytes + optimizer_bytes) / 2);
    ASSERT_TRUE(limit.ok()) << std::strerror(errno);
    err = testing::error_of([&] { train(saving_args(dir.path(), 3), "last"); });
  }
  EXPECT_NE(err.find("[safetensors] " + dir.sub("tmp-checkpoint-3/optimizer.safetensors")),
            std::string::npos)
      << err;
  EXPECT_NE(err.find(std::strerror(EFBIG)), std::string::npos) << err;
  EXPECT_TRUE(names_starting(dir.path(), "tmp-").empty());
  EXPECT_EQ(testing::checkpoint_names(dir.path()),
            (std::vector<std::string>{"checkpoint-1", "checkpoint-2"}));
  // The earlier checkpoints still resume; the failed step is redone.
  train(saving_args(dir.path(), 3), "last");
  EXPECT_EQ(testing::checkpoint_names(dir.path()),
            (std::vector<std::string>{"checkpoint-1", "checkpoint-2", "checkpoint-3"}));
}

// A tmpfs of `bytes` mounted on a fresh directory; unmounted on destruction.
class TinyTmpfs {
 public:
  explicit TinyTmpfs(uintmax_t bytes) {
    const std::string opts = "size=" + std::to_string(bytes);
    if (::mount("tmpfs", dir_.path().c_str(), "tmpfs", 0, opts.c_str()) == 0)
      mounted_ = true;
    else
      why_ = std::strerror(errno);
  }
  ~TinyTmpfs() {
    if (mounted_) ::umount2(dir_.path().c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const std::string& why() const { return why_; }
  std::string sub(const std::string& name) const { return dir_.sub(name); }

 private:
  testing::TempDir dir_;
  bool mounted_ = false;
  std::string why_;
};

TEST(TrainerFailedSave, DiskFullRemovesTheTmpCheckpoint) {
  const auto [model_bytes, optimizer_bytes] = checkpoint_file_sizes();
  // Room for the model file and the small files (pages of 4 KiB each), not
  // for the optimizer state as well.
  TinyTmpfs disk(model_bytes + optimizer_bytes / 2 + 8 * 4096);
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here: " << disk.why();
  const std::string out = disk.sub("out");
  const std::string err = testing::error_of([&] { train(saving_args(out, 1)); });
  EXPECT_NE(err.find("tmp-checkpoint-1/"), std::string::npos) << err;
  EXPECT_NE(err.find(std::strerror(ENOSPC)), std::string::npos) << err;
  EXPECT_TRUE(names_starting(out, "tmp-").empty());
  EXPECT_TRUE(testing::checkpoint_names(out).empty());
  // The space is free again: the same model file can be written.
  std::error_code ec;
  const fs::space_info space = fs::space(out, ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_GE(space.available, model_bytes);
}

}  // namespace
}  // namespace loom
