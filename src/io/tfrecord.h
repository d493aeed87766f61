// TFRecord framing, the container of TensorBoard event files: each record is
//   uint64 length (little-endian)
//   uint32 masked CRC-32C of the 8 length bytes
//   length bytes of data
//   uint32 masked CRC-32C of the data
// with mask(crc) = ((crc >> 15) | (crc << 17)) + 0xa282ead8. Source: the
// TFRecord format description of tensorflow/core/lib/io/record_writer.h and
// the masking of tensorflow/core/lib/hash/crc32c.h. CRC-32C is the
// Castagnoli polynomial (reflected 0x82F63B78) of RFC 3720 section B.4.
// Assumes a little-endian host (checked at compile time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom::io {

/// CRC-32C of `n` bytes, continuing from `crc` (0 to start).
/// crc32c("123456789") == 0xE3069283 (RFC 3720 B.4's check value).
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);
/// TFRecord's masked CRC-32C of `n` bytes (see the top of this file).
uint32_t masked_crc32c(const void* data, size_t n);

/// One record framed for a TFRecord file: 16 + data.size() bytes.
std::string tfrecord_frame(std::string_view data);

/// The records of a TFRecord byte string.
struct TFRecords {
  std::vector<std::string> records;  ///< each record's data, in file order
  /// The bytes after the last complete record were a record cut short (a
  /// writer killed mid-write); they are skipped, as TensorBoard skips them.
  bool truncated_tail = false;
};

/// Splits `bytes` into records, checking both CRCs of every complete record.
/// A last record cut short is skipped (truncated_tail). Throws loom::Error
/// "[tfrecord] <where>: record <i> at byte <offset>: length CRC 0x... does
/// not match 0x..." (or "data CRC") for a corrupted record.
TFRecords read_tfrecords(std::string_view bytes, const std::string& where = "<bytes>");
/// read_tfrecords on a file's bytes; loom::Error naming `path` when unreadable.
TFRecords read_tfrecord_file(const std::string& path);

}  // namespace loom::io
