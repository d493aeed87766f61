// A small reader of TensorBoard event files for the tests: TFRecord records
// (io/tfrecord.h checks the CRCs and skips a cut-short last record) decoded
// as Event protobufs, keeping the fields loom writes (io/tb_event.h lists
// them). An independent decoder of the wire format: it shares no code with
// the encoder, so an encoding mistake shows up as a wrong field here.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "io/tfrecord.h"
#include "loom/error.h"

namespace loom::testing {

struct TbValue {
  std::string tag;
  bool has_simple_value = false;
  float simple_value = 0;
  std::string plugin_name;  ///< metadata.plugin_data.plugin_name
  std::string text;         ///< tensor.string_val[0]
};

struct TbEvent {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;
  std::vector<TbValue> values;
};

/// Protobuf wire-format fields of one message: field number, wire type and
/// either the integer (varint / fixed) or the bytes (length-delimited).
struct PbField {
  uint32_t number = 0, type = 0;
  uint64_t integer = 0;
  std::string_view bytes;
};

inline uint64_t pb_varint(std::string_view s, size_t& pos) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    LOOM_CHECK(pos < s.size(), "[tb_reader] varint runs past the message");
    const auto b = static_cast<unsigned char>(s[pos++]);
    v |= uint64_t{b & 0x7fu} << shift;
    if (!(b & 0x80)) return v;
  }
  fail("[tb_reader] varint longer than 10 bytes");
}

inline std::vector<PbField> pb_fields(std::string_view s) {
  std::vector<PbField> out;
  size_t pos = 0;
  while (pos < s.size()) {
    const uint64_t key = pb_varint(s, pos);
    PbField f{static_cast<uint32_t>(key >> 3), static_cast<uint32_t>(key & 7), 0, {}};
    if (f.type == 0) {
      f.integer = pb_varint(s, pos);
    } else if (f.type == 1 || f.type == 5) {
      const size_t n = f.type == 1 ? 8 : 4;
      LOOM_CHECK(pos + n <= s.size(), "[tb_reader] fixed field runs past the message");
      std::memcpy(&f.integer, s.data() + pos, n);
      pos += n;
    } else if (f.type == 2) {
      const uint64_t n = pb_varint(s, pos);
      LOOM_CHECK(n <= s.size() - pos, "[tb_reader] bytes field runs past the message");
      f.bytes = s.substr(pos, n);
      pos += n;
    } else {
      fail("[tb_reader] unsupported wire type ", f.type);
    }
    out.push_back(f);
  }
  return out;
}

inline TbValue tb_decode_value(std::string_view s) {
  TbValue v;
  for (const PbField& f : pb_fields(s)) {
    if (f.number == 1) v.tag = std::string(f.bytes);
    if (f.number == 2 && f.type == 5) {
      const auto bits = static_cast<uint32_t>(f.integer);
      std::memcpy(&v.simple_value, &bits, 4);
      v.has_simple_value = true;
    }
    if (f.number == 8)  // TensorProto: string_val = 8
      for (const PbField& t : pb_fields(f.bytes))
        if (t.number == 8 && v.text.empty()) v.text = std::string(t.bytes);
    if (f.number == 9)  // SummaryMetadata: plugin_data = 1 { plugin_name = 1 }
      for (const PbField& m : pb_fields(f.bytes))
        if (m.number == 1)
          for (const PbField& p : pb_fields(m.bytes))
            if (p.number == 1) v.plugin_name = std::string(p.bytes);
  }
  return v;
}

inline TbEvent tb_decode_event(std::string_view s) {
  TbEvent e;
  for (const PbField& f : pb_fields(s)) {
    if (f.number == 1 && f.type == 1) std::memcpy(&e.wall_time, &f.integer, 8);
    if (f.number == 2 && f.type == 0) e.step = static_cast<int64_t>(f.integer);
    if (f.number == 3) e.file_version = std::string(f.bytes);
    if (f.number == 5)
      for (const PbField& v : pb_fields(f.bytes))
        if (v.number == 1) e.values.push_back(tb_decode_value(v.bytes));
  }
  return e;
}

/// Every event of an event file, in order.
inline std::vector<TbEvent> tb_read_events(const std::string& path) {
  std::vector<TbEvent> out;
  for (const std::string& r : io::read_tfrecord_file(path).records)
    out.push_back(tb_decode_event(r));
  return out;
}

/// The event files (events.out.tfevents.*) under `dir`, recursively, sorted.
inline std::vector<std::string> tb_event_files(const std::string& dir) {
  std::vector<std::string> out;
  if (!std::filesystem::is_directory(dir)) return out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename().string().rfind("events.out.tfevents.", 0) == 0)
      out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace loom::testing
