// TokenFile and TokenBlockDataset (loom/token_cache.h): opening and
// validating a token file written by token_cache.cpp, reading ids by
// position with pread, and the fixed-size blocks over them.
//
// Reads use pread instead of a memory map on purpose: a mapping would count
// every page an epoch has visited in this process's RSS (file-backed, but
// still resident and reported by ru_maxrss), so RSS would grow to the token
// file's size over an epoch; with pread the kernel's page cache holds them,
// outside the process, and RSS stays flat whatever the corpus size.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "data/token_file_format.h"
#include "loom/error.h"
#include "loom/token_cache.h"

namespace loom::data {

namespace token_format {

Hash128 header_hash(const Header& h) {
  return hash_bytes(Hash128{0x6c6f6f6d746f6b31ULL, 0x68656164657231ULL}, &h,
                    offsetof(Header, header_hash_lo));
}

void pread_all(int fd, void* dst, size_t n, int64_t offset, const std::string& path) {
  auto* p = static_cast<char*>(dst);
  while (n > 0) {
    ssize_t got = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    LOOM_CHECK(got > 0, "[token cache] ", path, ": read error at byte ", offset, ": ",
               got < 0 ? std::strerror(errno) : "unexpected end of file");
    p += got;
    n -= static_cast<size_t>(got);
    offset += got;
  }
}

Hash128 body_hash(int fd, int64_t tokens, const std::string& path) {
  StreamHasher h(kBodyHashSeed);
  std::vector<char> buf(size_t{4} << 20);
  for (int64_t at = 0, left = 4 * tokens; left > 0;) {
    const auto n = static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(buf.size())));
    pread_all(fd, buf.data(), n, kHeaderBytes + at, path);
    h.update(buf.data(), n);
    at += static_cast<int64_t>(n);
    left -= static_cast<int64_t>(n);
  }
  return h.finish();
}

}  // namespace token_format

namespace {

// Closes `fd` unless released (an open that fails half-way).
struct TokenFdGuard {
  int fd;
  ~TokenFdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::shared_ptr<const TokenFile> TokenFile::open(const std::string& path,
                                                 const std::string& expected_key) {
  using namespace token_format;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  LOOM_CHECK(fd >= 0, "[token cache] ", path, ": missing (", std::strerror(errno), ")");
  TokenFdGuard guard{fd};
  struct stat st {};
  LOOM_CHECK(::fstat(fd, &st) == 0 && S_ISREG(st.st_mode), "[token cache] ", path,
             ": corrupt: not a regular file");
  const auto bytes = static_cast<int64_t>(st.st_size);
  LOOM_CHECK(bytes >= kHeaderBytes, "[token cache] ", path, ": corrupt: ", bytes,
             " bytes, shorter than the header");
  Header h{};
  pread_all(fd, &h, sizeof h, 0, path);
  LOOM_CHECK(std::memcmp(h.magic, kMagic, sizeof h.magic) == 0 && h.version == kVersion &&
                 h.header_bytes == kHeaderBytes,
             "[token cache] ", path, ": corrupt: not a loom token file of version ", kVersion);
  Hash128 hh = header_hash(h);
  LOOM_CHECK(hh.lo == h.header_hash_lo && hh.hi == h.header_hash_hi, "[token cache] ", path,
             ": corrupt: the header hash does not match");
  const Hash128 key{h.key_lo, h.key_hi};
  LOOM_CHECK(expected_key.empty() || key.hex() == expected_key, "[token cache] ", path,
             ": stale: made from another version of the data file (its contents changed)");
  const auto tokens = static_cast<int64_t>(h.tokens);
  LOOM_CHECK(tokens >= 0 && bytes == kHeaderBytes + 4 * tokens, "[token cache] ", path,
             ": corrupt: ", bytes, " bytes, the header says ", tokens, " tokens");
  Hash128 bh = body_hash(fd, tokens, path);  // reads every id once: damage anywhere is caught
  LOOM_CHECK(bh.lo == h.body_hash_lo && bh.hi == h.body_hash_hi, "[token cache] ", path,
             ": corrupt: the checksum of its ids does not match");
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);  // blocks are read in shuffled order
  std::shared_ptr<TokenFile> f(new TokenFile());
  f->path_ = path;
  f->fd_ = fd;
  guard.fd = -1;
  f->tokens_ = tokens;
  f->lines_ = static_cast<int64_t>(h.lines);
  return f;
}

TokenFile::~TokenFile() {
  if (fd_ >= 0) ::close(fd_);
}

void TokenFile::read(int64_t start, int64_t n, std::vector<int64_t>& out) const {
  LOOM_CHECK(start >= 0 && n >= 0 && start + n <= tokens_, "[token cache] ", path_, ": ids [",
             start, ", ", start + n, ") outside [0, ", tokens_, ")");
  std::vector<int32_t> ids(static_cast<size_t>(n));
  token_format::pread_all(fd_, ids.data(), ids.size() * 4, token_format::kHeaderBytes + 4 * start,
                          path_);
  out.assign(ids.begin(), ids.end());
}

TokenBlockDataset::TokenBlockDataset(std::shared_ptr<const TokenFile> tokens, int64_t block_size,
                                     bool with_labels, int64_t max_examples)
    : tokens_(std::move(tokens)), block_(block_size), with_labels_(with_labels) {
  LOOM_CHECK(tokens_ != nullptr, "[dataset] TokenBlockDataset: no token file");
  LOOM_CHECK(block_size > 0, "[dataset] ", tokens_->path(), ": block_size must be > 0, got ",
             block_size);
  size_ = tokens_->size() / block_size;  // the remainder is dropped, as group_texts
  if (max_examples >= 0) size_ = std::min(size_, max_examples);
}

Example TokenBlockDataset::get(int64_t index) const {
  LOOM_CHECK(index >= 0 && index < size_, "[dataset] index ", index, " out of range [0, ", size_,
             ")");
  Example e;
  tokens_->read(index * block_, block_, e.input_ids);
  if (with_labels_) e.labels = e.input_ids;
  return e;
}

}  // namespace loom::data
