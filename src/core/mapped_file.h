// MappedFile: a read-only, memory-mapped view of a whole regular file (POSIX
// mmap, MAP_PRIVATE). Assumes the file is not truncated by another process
// while mapped (that would raise SIGBUS on access, as with any mmap reader);
// replacing it by rename, as loom's atomic writers do, is safe: the mapping
// keeps the old inode alive.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace loom {

class MappedFile {
 public:
  /// Maps `path` read-only. `tag` names the caller in error messages.
  /// Throws loom::Error "[tag] path: cannot open: <reason>" when the file is
  /// missing, unreadable, not a regular file (directories, FIFOs: a FIFO is
  /// opened non-blocking so this never hangs) or cannot be mapped.
  /// An empty file gives size() == 0 and bytes() empty.
  static MappedFile open(const std::string& path, std::string_view tag);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  /// The whole file; valid while this object lives.
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  void release() noexcept;

  std::string path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace loom
