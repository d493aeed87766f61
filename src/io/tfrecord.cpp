// TFRecord framing and CRC-32C (formats and sources in tfrecord.h). The CRC
// is the bytewise table method over the reflected Castagnoli polynomial.
#include "io/tfrecord.h"

#include <array>
#include <bit>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "loom/error.h"

static_assert(std::endian::native == std::endian::little, "TFRecord framing assumes little-endian");

namespace loom::io {
namespace {

constexpr uint32_t kCastagnoliReflected = 0x82F63B78u;
constexpr uint32_t kMaskDelta = 0xa282ead8u;  // tensorflow/core/lib/hash/crc32c.h

constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kCastagnoliReflected : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kTable = make_table();

uint32_t mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

template <typename T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

uint32_t crc32c(const void* data, size_t n, uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = kTable[(crc ^ p[i]) & 0xffu] ^ (crc >> 8);
  return ~crc;
}

uint32_t masked_crc32c(const void* data, size_t n) { return mask(crc32c(data, n)); }

std::string tfrecord_frame(std::string_view data) {
  const uint64_t length = data.size();
  std::string out(16 + data.size(), '\0');
  std::memcpy(out.data(), &length, 8);
  const uint32_t length_crc = masked_crc32c(out.data(), 8);
  std::memcpy(out.data() + 8, &length_crc, 4);
  std::memcpy(out.data() + 12, data.data(), data.size());
  const uint32_t data_crc = masked_crc32c(data.data(), data.size());
  std::memcpy(out.data() + 12 + data.size(), &data_crc, 4);
  return out;
}

TFRecords read_tfrecords(std::string_view bytes, const std::string& where) {
  TFRecords out;
  size_t pos = 0;
  for (size_t index = 0; pos < bytes.size(); ++index) {
    const size_t left = bytes.size() - pos;
    if (left < 12) break;  // the length or its CRC cut short
    const char* p = bytes.data() + pos;
    const uint32_t length_crc = masked_crc32c(p, 8), stored_length_crc = load<uint32_t>(p + 8);
    LOOM_CHECK(length_crc == stored_length_crc, "[tfrecord] ", where, ": record ", index,
               " at byte ", pos, ": length CRC ", hex(stored_length_crc), " does not match ",
               hex(length_crc));
    const uint64_t length = load<uint64_t>(p);
    if (length > left - 12 || left - 12 - length < 4) break;  // data or its CRC cut short
    const uint32_t data_crc = masked_crc32c(p + 12, length);
    const uint32_t stored_data_crc = load<uint32_t>(p + 12 + length);
    LOOM_CHECK(data_crc == stored_data_crc, "[tfrecord] ", where, ": record ", index, " at byte ",
               pos, ": data CRC ", hex(stored_data_crc), " does not match ", hex(data_crc));
    out.records.emplace_back(p + 12, length);
    pos += 16 + length;
  }
  out.truncated_tail = pos < bytes.size();
  return out;
}

TFRecords read_tfrecord_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(in.good(), "[tfrecord] cannot open ", path);
  std::stringstream s;
  s << in.rdbuf();
  return read_tfrecords(s.str(), path);
}

}  // namespace loom::io
