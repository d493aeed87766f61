// append_json_string: a string as a JSON string literal, escaped as serde_json
// and Python's json.dumps(ensure_ascii=False) both write it: \" \\ \b \t \n \f
// \r, other bytes below 0x20 as \u00xx with lowercase hex, every other byte
// verbatim (UTF-8 passes through). The safetensors header (its bytes match the
// reference's) and the chat templates' `tojson` (transformers' output) use it.
// Assumes nothing of `s`: no UTF-8 check here.
#pragma once

#include <string>
#include <string_view>

namespace loom {

inline void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

}  // namespace loom
