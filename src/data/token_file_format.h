// The on-disk layout of a loom token file (loom/token_cache.h), shared by its
// writer (token_cache.cpp) and reader (token_file.cpp): a 128-byte
// little-endian header, then `tokens` int32 ids. Assumes a little-endian host
// (the file is a cache, never moved between machines).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/stream_hash.h"

namespace loom::data::token_format {

inline constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'T', 'O', 'K', '1'};
// Version 2 (2026-12-07): the key covers every byte of the data file (was its
// size, mtime and first and last MiB), and body_hash every id (was the first
// and last 64 Ki). A version-1 file is rebuilt.
inline constexpr uint32_t kVersion = 2;
inline constexpr int64_t kHeaderBytes = 128;

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t header_bytes;
  uint64_t key_lo, key_hi;  // data file contents + tokenizer + flags (TokenCacheKey)
  uint64_t tokens;
  uint64_t lines;
  uint64_t body_hash_lo, body_hash_hi;  // body_hash(): every id after the header
  uint64_t reserved[6];
  uint64_t header_hash_lo, header_hash_hi;  // header_hash(): every byte before these
};
static_assert(sizeof(Header) == kHeaderBytes);

/// Hash of the header's bytes before header_hash_lo.
Hash128 header_hash(const Header& h);
/// The seed of body_hash: a StreamHasher over the ids' bytes, in file order.
inline constexpr Hash128 kBodyHashSeed{0x626f647968617368ULL, 2};
/// Hash of every id of the file open as `fd` (`tokens` int32 after the
/// header), read in chunks.
Hash128 body_hash(int fd, int64_t tokens, const std::string& path);
/// pread of exactly n bytes at `offset`; loom::Error naming `path` otherwise.
void pread_all(int fd, void* dst, size_t n, int64_t offset, const std::string& path);

}  // namespace loom::data::token_format
