// MappedFile: open + fstat + mmap(PROT_READ, MAP_PRIVATE) of a regular file.
// Assumes POSIX (Linux, macOS).
#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "loom/error.h"

namespace loom {

namespace {

// Closes a descriptor on scope exit; the mapping outlives it.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

MappedFile MappedFile::open(const std::string& path, std::string_view tag) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is rejected below.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail("[", tag, "] ", path, ": cannot open: ", std::strerror(errno));
  FdCloser closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail("[", tag, "] ", path, ": cannot stat: ", std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail("[", tag, "] ", path, ": cannot open: not a regular file");

  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<size_t>(st.st_size);
  if (file.size_ == 0) return file;  // mmap of length 0 is an error; nothing to map
  void* addr = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
  if (addr == MAP_FAILED) {
    fail("[", tag, "] ", path, ": cannot mmap ", file.size_, " bytes: ", std::strerror(errno));
  }
  file.data_ = static_cast<const std::byte*>(addr);
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() { release(); }

void MappedFile::release() noexcept {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace loom
