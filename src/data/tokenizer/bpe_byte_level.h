// The GPT-2 byte-to-unicode map used by byte-level BPE (ByteLevel pre-tokenizer and
// decoder): every byte 0..255 is shown as one printable code point, so that a byte string
// can be written as text. Bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF map to themselves; the
// other 68 bytes map, in increasing order, to U+0100, U+0101, ... (source: OpenAI gpt-2
// encoder.py `bytes_to_unicode`, also tokenizers/src/pre_tokenizers/byte_level.rs).
#pragma once

#include <cstdint>
#include <string>

namespace loom::data::byte_level {

/// The code point that stands for `byte`.
char32_t byte_to_char(uint8_t byte);
/// UTF-8 of byte_to_char(byte).
const std::string& byte_to_utf8(uint8_t byte);
/// The byte a code point stands for, or -1 when it is not in the map.
int char_to_byte(char32_t cp);

}  // namespace loom::data::byte_level
