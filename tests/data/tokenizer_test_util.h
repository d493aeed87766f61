// Helpers for the tokenizer tests: paths under LOOM_SOURCE_DIR, fixture loading, temporary
// files, byte -> character offset conversion (the rule of the `tokenizers` Python binding),
// and vector comparison that prints the first difference side by side.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/temp_dir.h"
#include "loom/tokenizer.h"

namespace loom::test {

using testing::TempDir;

inline std::string source_path(const std::string& rel) {
  return std::string(LOOM_SOURCE_DIR) + "/" + rel;
}

/// The tokenizers shipped in assets/, loaded once per test binary.
inline const Tokenizer& gpt2() {
  static const Tokenizer tok = Tokenizer::from_pretrained(source_path("assets/tokenizers/gpt2"));
  return tok;
}
inline const Tokenizer& bert() {
  static const Tokenizer tok =
      Tokenizer::from_pretrained(source_path("assets/tokenizers/bert-base-uncased"));
  return tok;
}

inline nlohmann::json load_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  return nlohmann::json::parse(buffer.str());
}

/// Byte offsets -> character offsets, as tokenizers' BytesToCharOffsetConverter does: a
/// start inside the text maps to its character; an end maps to one past the character
/// holding its last byte (end - 1), so an end inside a character (a byte-fallback token)
/// covers that whole character; a start at the end leaves the pair unchanged.
inline std::vector<std::vector<int64_t>> to_char_offsets(const std::string& text,
                                                         const std::vector<TokenOffset>& offs) {
  std::vector<int64_t> char_of(text.size());
  int64_t c = -1;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++c;
    char_of[i] = c;
  }
  const int64_t n = static_cast<int64_t>(text.size());
  std::vector<std::vector<int64_t>> out;
  for (const TokenOffset& o : offs) {
    if (o.begin >= n) {
      out.push_back({o.begin, o.end});
      continue;
    }
    int64_t b = char_of[o.begin];
    int64_t e = o.end > 0 ? char_of[std::min(o.end, n) - 1] + 1 : 0;
    out.push_back({b, e});
  }
  return out;
}

/// Checks a == b; on failure prints the first differing position and values around it.
template <typename T>
::testing::AssertionResult same_values(const std::vector<T>& got, const std::vector<T>& want) {
  if (got == want) return ::testing::AssertionSuccess();
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  std::ostringstream msg;
  msg << "sizes " << got.size() << " (loom) vs " << want.size() << " (reference); first "
      << "difference at " << i << "\n  loom:      ";
  auto show = [&](const std::vector<T>& v) {
    for (size_t k = (i > 3 ? i - 3 : 0); k < v.size() && k < i + 6; ++k) {
      if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
        msg << "(" << v[k][0] << "," << v[k][1] << ") ";
      } else {
        msg << v[k] << " ";
      }
    }
  };
  show(got);
  msg << "\n  reference: ";
  show(want);
  return ::testing::AssertionFailure() << msg.str();
}

inline std::vector<int32_t> ids_of(const nlohmann::json& j) {
  return j.get<std::vector<int32_t>>();
}

}  // namespace loom::test
