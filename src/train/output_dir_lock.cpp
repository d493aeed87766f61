// OutputDirLock (train/output_dir_lock.h): open-or-create the lock file,
// flock(LOCK_EX | LOCK_NB) it, check that the locked file is still the one at
// the path (a releaser may have unlinked it), then write our pid into it.
#include "loom/output_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "loom/error.h"

namespace loom::train {
namespace {

// The pid text in an open lock file ("" when empty or unreadable).
std::string read_owner(int fd) {
  char buf[32] = {};
  ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  std::string s = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// True when `fd` is still the file at `path` (not unlinked or replaced).
bool same_file(int fd, const std::string& path) {
  struct stat a = {};
  struct stat b = {};
  if (::fstat(fd, &a) != 0 || ::stat(path.c_str(), &b) != 0) return false;
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

}  // namespace

OutputDirLock::OutputDirLock(const std::string& output_dir, const std::string& who) {
  LOOM_CHECK(!output_dir.empty(), "[", who, "] output_dir must not be empty");
  std::error_code ec;
  // The folders this lock creates, deepest first: removed again on release
  // while they are empty (a run that failed before writing leaves nothing).
  for (std::filesystem::path p = std::filesystem::absolute(output_dir, ec).lexically_normal();
       !ec && !p.empty() && !std::filesystem::exists(p, ec) && p != p.parent_path();
       p = p.parent_path())
    created_dirs_.push_back(p.string());
  std::filesystem::create_directories(output_dir, ec);
  LOOM_CHECK(!ec, "[", who, "] output_dir '", output_dir, "': cannot create it (", ec.message(),
             ")");
  path_ = (std::filesystem::path(output_dir) / kOutputDirLockFile).string();
  for (int attempt = 0; attempt < 100; ++attempt) {
    int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    LOOM_CHECK(fd >= 0, "[", who, "] output_dir '", output_dir, "': cannot create the lock file ",
               path_, " (", std::strerror(errno), ")");
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int err = errno;
      std::string owner = read_owner(fd);
      ::close(fd);
      if (err == EWOULDBLOCK)
        fail("[", who, "] output_dir '", output_dir, "' is in use by another run (pid ",
             owner.empty() ? "unknown" : owner, ", lock file ", path_,
             "); wait for it to finish or choose another --output_dir");
      fail("[", who, "] output_dir '", output_dir, "': cannot lock ", path_, " (",
           std::strerror(err), ")");
    }
    if (!same_file(fd, path_)) {  // released and removed between our open and flock
      ::close(fd);
      continue;
    }
    std::string owner = read_owner(fd);
    if (!owner.empty())
      std::fprintf(stderr,
                   "loom: warning: %s: taking over the stale lock of pid %s (that process is "
                   "gone; it did not finish cleanly)\n",
                   path_.c_str(), owner.c_str());
    std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
      int err = errno;
      ::close(fd);
      fail("[", who, "] output_dir '", output_dir, "': cannot write the lock file ", path_, " (",
           std::strerror(err), ")");
    }
    fd_ = fd;
    return;
  }
  remove_created_dirs();
  fail("[", who, "] output_dir '", output_dir, "': the lock file ", path_,
       " keeps changing (another run starting and stopping?)");
}

OutputDirLock::~OutputDirLock() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // while still locked: see the header
  ::close(fd_);             // releases the flock
  remove_created_dirs();
}

void OutputDirLock::remove_created_dirs() {
  for (const std::string& dir : created_dirs_)
    if (::rmdir(dir.c_str()) != 0) break;  // not empty (the run wrote something): kept
}

}  // namespace loom::train
