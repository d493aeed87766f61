// OutputDirLock (train/output_dir_lock.h): a second lock on the same
// output_dir fails naming the holder's pid and the lock file; releasing
// removes the file; a lock file left by a process that died (present but
// not flock-ed) is taken over with a warning naming the dead pid.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "common/error_of.h"
#include "common/temp_dir.h"
#include "io/pretrained_files.h"
#include "loom/models.h"
#include "loom/output_dir_lock.h"

namespace loom::train {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using testing::TempDir;

TEST(OutputDirLock, SecondRunFailsWhileTheFirstHoldsIt) {
  TempDir tmp;
  const std::string out = tmp / "out";
  std::optional<OutputDirLock> first;
  first.emplace(out, "loom train");
  const std::string file = out + "/" + kOutputDirLockFile;
  ASSERT_TRUE(fs::exists(file));
  std::string pid;
  std::ifstream(file) >> pid;
  EXPECT_EQ(pid, std::to_string(::getpid()));
  std::string m = error_of([&] { OutputDirLock second(out, "loom train"); });
  EXPECT_NE(m.find("[loom train] output_dir '" + out + "' is in use by another run (pid " +
                   std::to_string(::getpid()) + ", lock file " + file + ")"),
            std::string::npos)
      << m;
  first.reset();
  EXPECT_FALSE(fs::exists(file)) << "released: the lock file is removed";
  EXPECT_NO_THROW(OutputDirLock again(out, "loom train"));
}

// A run that fails after taking the lock, before writing anything, leaves no
// empty output_dir behind (nor the parents the lock created); a folder that
// existed before, or one the run wrote into, stays.
TEST(OutputDirLock, ReleaseRemovesTheEmptyFoldersItCreated) {
  TempDir tmp;
  const std::string out = tmp / "a/b/out";
  { OutputDirLock lock(out, "loom train"); }
  EXPECT_FALSE(fs::exists(tmp / "a")) << "created a/b/out, all empty: all removed";
  fs::create_directories(tmp / "kept");
  { OutputDirLock lock(tmp / "kept", "loom train"); }
  EXPECT_TRUE(fs::is_directory(tmp / "kept")) << "existed before the lock: kept";
  {
    OutputDirLock lock(out, "loom train");
    std::ofstream(out + "/trainer_state.json") << "{}";
  }
  EXPECT_TRUE(fs::exists(out + "/trainer_state.json"));
  EXPECT_FALSE(fs::exists(out + "/" + kOutputDirLockFile));
}

// save_model() replaces output_dir by a new directory (io::write_pretrained_dir);
// the lock must hold in the new one, else a second run could start while the
// first one still evaluates and writes its results.
TEST(OutputDirLock, HoldsAcrossSavePretrainedIntoTheOutputDir) {
  TempDir tmp;
  const std::string out = tmp / "out";
  OutputDirLock lock(out, "loom train");
  const float w[2] = {1, 2};
  io::write_pretrained_dir(out, {{"config.json", "{}"}}, {{"w", DType::f32, {2}, w}},
                           kDefaultMaxShardSize);
  ASSERT_TRUE(fs::exists(out + "/model.safetensors"));
  std::string m = error_of([&] { OutputDirLock second(out, "loom train"); });
  EXPECT_NE(m.find("is in use by another run"), std::string::npos) << m;
}

TEST(OutputDirLock, StaleLockOfADeadProcessIsTakenOverWithAWarning) {
  TempDir tmp;
  const std::string out = tmp / "out";
  fs::create_directories(out);
  const std::string file = out + "/" + kOutputDirLockFile;
  std::ofstream(file) << "4194999\n";  // a crashed run's file: no process holds its flock
  ::testing::internal::CaptureStderr();
  std::optional<OutputDirLock> lock;
  EXPECT_NO_THROW(lock.emplace(out, "loom train"));
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("taking over the stale lock of pid 4194999"), std::string::npos) << err;
  std::string pid;
  std::ifstream(file) >> pid;
  EXPECT_EQ(pid, std::to_string(::getpid()));
}

TEST(OutputDirLock, UnusableOutputDirNamesIt) {
  TempDir tmp;
  const std::string file = tmp.write("plain", "x");
  std::string m = error_of([&] { OutputDirLock lock(file + "/sub", "loom train"); });
  EXPECT_NE(m.find("[loom train] output_dir '" + file + "/sub': cannot create it"),
            std::string::npos)
      << m;
}

}  // namespace
}  // namespace loom::train
