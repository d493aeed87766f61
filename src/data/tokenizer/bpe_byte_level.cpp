// The GPT-2 byte-to-unicode map; see data/bpe_byte_level.h for the definition.
#include "data/tokenizer/bpe_byte_level.h"

#include <array>

#include "data/tokenizer/tokenizer_unicode.h"

namespace loom::data::byte_level {
namespace {

struct Tables {
  std::array<char32_t, 256> to_char{};
  std::array<std::string, 256> to_utf8;
  std::array<int16_t, 0x180> to_byte{};  // all mapped code points are below U+0144

  Tables() {
    to_byte.fill(-1);
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + next++);
      to_char[b] = cp;
      unicode::append_utf8(to_utf8[b], cp);
      to_byte[cp] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

char32_t byte_to_char(uint8_t byte) { return tables().to_char[byte]; }

const std::string& byte_to_utf8(uint8_t byte) { return tables().to_utf8[byte]; }

int char_to_byte(char32_t cp) {
  if (cp >= 0x180) return -1;
  return tables().to_byte[cp];
}

}  // namespace loom::data::byte_level
