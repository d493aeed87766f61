// Unicode helpers for the tokenizers, backed by utf8proc. See data/tokenizer_unicode.h.
// UTF-8 well-formedness follows the Unicode Standard, Table 3-7 (well-formed byte sequences).
#include "data/tokenizer/tokenizer_unicode.h"

#include <utf8proc.h>

#include <array>
#include <cstring>

namespace loom::data::unicode {
namespace {

// Length of the well-formed prefix of the sequence at s[i] (0 if s[i] cannot start one),
// and whether it is complete (Unicode Table 3-7).
struct SeqCheck {
  int valid_prefix;
  bool complete;
};

SeqCheck check_sequence(std::string_view s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  int n = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return {0, false};
  }
  for (int k = 1; k < n; ++k) {
    if (i + k >= s.size()) return {k, false};
    unsigned char b = static_cast<unsigned char>(s[i + k]);
    unsigned char l = k == 1 ? lo : 0x80;
    unsigned char h = k == 1 ? hi : 0xBF;
    if (b < l || b > h) return {k, false};
  }
  return {n, true};
}

bool is_ascii_punct(char32_t cp) {
  return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
         (cp >= 123 && cp <= 126);
}

}  // namespace

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool is_valid_utf8(std::string_view text) {
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    // Skip ASCII eight bytes at a time.
    while (i + 8 <= n) {
      uint64_t word;
      std::memcpy(&word, text.data() + i, 8);
      if (word & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= n) break;
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    SeqCheck c = check_sequence(text, i);
    if (!c.complete) return false;
    i += c.valid_prefix;
  }
  return true;
}

void repair_utf8(std::string_view text, std::string& out) {
  out.clear();
  out.reserve(text.size() + 8);
  size_t i = 0;
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    SeqCheck check = check_sequence(text, i);
    if (check.complete) {
      out.append(text.substr(i, check.valid_prefix));
      i += check.valid_prefix;
    } else {
      append_utf8(out, 0xFFFD);
      i += check.valid_prefix == 0 ? 1 : check.valid_prefix;
    }
  }
}

int category(char32_t cp) {
  return utf8proc_get_property(static_cast<utf8proc_int32_t>(cp))->category;
}

bool is_letter(char32_t cp) {
  int c = category(cp);
  return c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO;
}

bool is_number(char32_t cp) {
  int c = category(cp);
  return c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO;
}

bool is_white_space(char32_t cp) {
  if ((cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85) return true;
  if (cp < 0x80) return false;
  int c = category(cp);
  return c == UTF8PROC_CATEGORY_ZS || c == UTF8PROC_CATEGORY_ZL || c == UTF8PROC_CATEGORY_ZP;
}

bool is_bert_punctuation(char32_t cp) {
  if (is_ascii_punct(cp)) return true;
  int c = category(cp);
  return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

bool is_bert_control(char32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  int c = category(cp);
  return c >= UTF8PROC_CATEGORY_CC && c <= UTF8PROC_CATEGORY_CO;
}

bool is_bert_chinese(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool is_mark_nonspacing(char32_t cp) { return category(cp) == UTF8PROC_CATEGORY_MN; }

bool is_mark(char32_t cp) {
  int c = category(cp);
  return c >= UTF8PROC_CATEGORY_MN && c <= UTF8PROC_CATEGORY_ME;
}

bool is_word_char(char32_t cp) {
  if (cp == '_' || cp == 0x200C || cp == 0x200D) return true;
  int c = category(cp);
  return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_ND) || c == UTF8PROC_CATEGORY_NL ||
         c == UTF8PROC_CATEGORY_PC;
}

int to_lower(char32_t cp, char32_t out[2]) {
  if (cp < 0x80) {
    out[0] = (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
    return 1;
  }
  if (cp == 0x130) {  // LATIN CAPITAL LETTER I WITH DOT ABOVE (SpecialCasing.txt)
    out[0] = 'i';
    out[1] = 0x307;
    return 2;
  }
  out[0] = static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
  return 1;
}

int decompose(char32_t cp, bool compat, char32_t* out, int cap) {
  int options = UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0);
  utf8proc_int32_t buffer[32];
  int last_boundclass = 0;
  utf8proc_ssize_t n =
      utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buffer, 32,
                              static_cast<utf8proc_option_t>(options), &last_boundclass);
  if (n < 0) {  // cannot happen for valid scalar values; keep the character
    if (cap > 0) out[0] = cp;
    return 1;
  }
  for (utf8proc_ssize_t k = 0; k < n && k < cap && k < 32; ++k) {
    out[k] = static_cast<char32_t>(buffer[k]);
  }
  return static_cast<int>(n);
}

int combining_class(char32_t cp) {
  return utf8proc_get_property(static_cast<utf8proc_int32_t>(cp))->combining_class;
}

char32_t compose_pair(char32_t a, char32_t b) {
  // utf8proc has no pairwise entry point: compose the two-code-point buffer and see whether
  // one code point is left.
  utf8proc_int32_t buffer[2] = {static_cast<utf8proc_int32_t>(a), static_cast<utf8proc_int32_t>(b)};
  utf8proc_ssize_t n = utf8proc_normalize_utf32(
      buffer, 2, static_cast<utf8proc_option_t>(UTF8PROC_COMPOSE | UTF8PROC_STABLE));
  return n == 1 ? static_cast<char32_t>(buffer[0]) : 0;
}

}  // namespace loom::data::unicode
