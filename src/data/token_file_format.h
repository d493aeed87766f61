// The on-disk layout of a loom token file (loom/token_cache.h), shared by its
// writer (token_cache.cpp) and reader (token_file.cpp): a 128-byte
// little-endian header, then `tokens` int32 ids. Assumes a little-endian host
// (the file is a cache, never moved between machines).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/hash.h"

namespace loom::data::token_format {

inline constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'T', 'O', 'K', '1'};
inline constexpr uint32_t kVersion = 1;
inline constexpr int64_t kHeaderBytes = 128;
inline constexpr int64_t kSampleTokens = 64 * 1024;  // hashed at each end of the ids

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t header_bytes;
  uint64_t key_lo, key_hi;  // data file identity + tokenizer + flags (TokenCacheKey)
  uint64_t tokens;
  uint64_t lines;
  uint64_t sample_hash_lo, sample_hash_hi;  // sample_hash()
  uint64_t reserved[6];
  uint64_t header_hash_lo, header_hash_hi;  // header_hash(): every byte before these
};
static_assert(sizeof(Header) == kHeaderBytes);

/// Hash of the header's bytes before header_hash_lo.
Hash128 header_hash(const Header& h);
/// Hash of the first and last kSampleTokens ids of the file open as `fd`.
Hash128 sample_hash(int fd, int64_t tokens, const std::string& path);
/// pread of exactly n bytes at `offset`; loom::Error naming `path` otherwise.
void pread_all(int fd, void* dst, size_t n, int64_t offset, const std::string& path);

}  // namespace loom::data::token_format
