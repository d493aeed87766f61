// Unicode helpers for the tokenizers: UTF-8 decoding/encoding, lossy repair of invalid
// UTF-8, and the character classes the `tokenizers` library uses, all answered by utf8proc
// (general categories, case mapping, canonical/compatibility decomposition) rather than
// hand-made tables. Character classes of ASCII are cached in a 128-entry table built from
// utf8proc at start-up.
//
// Assumes: code points passed in are valid scalar values (callers decode repaired UTF-8).
// utf8proc's Unicode version may differ from the tables inside `tokenizers` (Oniguruma,
// Rust std, the unicode_categories crate); see docs/tokenizers.md for what that changes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace loom::data::unicode {

/// Number of bytes of the UTF-8 sequence starting with `lead` (1 for continuation bytes).
inline int utf8_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xF0) return 4;
  if (lead >= 0xE0) return 3;
  if (lead >= 0xC0) return 2;
  return 1;
}

/// Decodes the code point at s[i] (valid UTF-8 assumed) and advances i past it.
inline char32_t decode_utf8(std::string_view s, size_t& i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) {
    ++i;
    return c;
  }
  int n = utf8_length(c);
  char32_t cp = n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
  for (int k = 1; k < n && i + k < s.size(); ++k) {
    cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  }
  i += n;
  return cp;
}

/// Appends the UTF-8 encoding of `cp` to `out`.
void append_utf8(std::string& out, char32_t cp);

/// True when `text` is well-formed UTF-8 (no overlongs, surrogates or values > U+10FFFF).
bool is_valid_utf8(std::string_view text);

/// Writes `text` to `out` with every maximal ill-formed subsequence replaced by U+FFFD
/// (Unicode "substitution of maximal subparts", as Rust's String::from_utf8_lossy).
void repair_utf8(std::string_view text, std::string& out);

/// utf8proc general category (UTF8PROC_CATEGORY_*).
int category(char32_t cp);

/// \p{L}: Lu, Ll, Lt, Lm, Lo.
bool is_letter(char32_t cp);
/// \p{N}: Nd, Nl, No.
bool is_number(char32_t cp);
/// Unicode White_Space property (Rust char::is_whitespace, Oniguruma \s): categories
/// Zs/Zl/Zp plus U+0009..U+000D and U+0085.
bool is_white_space(char32_t cp);
/// BERT punctuation: ASCII punctuation or any P* category.
bool is_bert_punctuation(char32_t cp);
/// BertNormalizer's control test: Cc, Cf, Co or Cs, except \t \n \r.
bool is_bert_control(char32_t cp);
/// BertNormalizer's whitespace test: \t \n \r or White_Space.
inline bool is_bert_whitespace(char32_t cp) { return is_white_space(cp); }
/// CJK ideograph ranges of BertNormalizer's handle_chinese_chars, as in `tokenizers`
/// (normalizers/bert.rs), including its 0x2B920 lower bound for the fifth range.
bool is_bert_chinese(char32_t cp);
/// Category Mn.
bool is_mark_nonspacing(char32_t cp);
/// Categories Mn, Mc, Me.
bool is_mark(char32_t cp);
/// Approximation of Rust regex \w: letters, marks, Nd, Nl, Pc, U+200C/U+200D.
bool is_word_char(char32_t cp);

/// Full lowercase of one code point (Rust char::to_lowercase): the simple mapping from
/// utf8proc, plus the one unconditional multi-character mapping U+0130 -> "i\u0307".
/// Writes 1 or 2 code points to out[] and returns how many.
int to_lower(char32_t cp, char32_t out[2]);

/// Canonical (compat = false, NFD) or compatibility (compat = true, NFKD) decomposition of
/// one code point, fully recursive, without reordering. Returns the number of code points
/// written to out[0..cap); when that exceeds cap, call again with a larger buffer.
int decompose(char32_t cp, bool compat, char32_t* out, int cap);

/// Canonical combining class (0 for starters).
int combining_class(char32_t cp);

/// The primary composite of `a` followed by `b` (Unicode canonical composition, composition
/// exclusions and Hangul included), or 0 when the pair does not compose.
char32_t compose_pair(char32_t a, char32_t b);

}  // namespace loom::data::unicode
