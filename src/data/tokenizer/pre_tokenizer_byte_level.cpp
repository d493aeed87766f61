// ByteLevel pre-tokenizer: the GPT-2 split pattern matched by hand over Unicode categories
// from utf8proc (no regex engine), plus the add_prefix_space rule. See data/pre_tokenizer.h.
//
// Pattern (OpenAI gpt-2 encoder.py, also `tokenizers` byte_level.rs):
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// At each position the first alternative that matches wins and its run is as long as
// possible. `\s+(?!\S)` takes a whitespace run but, when a non-space follows, gives back
// the last whitespace character (so that " word" keeps its space); a lone whitespace
// character before a non-space falls through to `\s+`.
#include <array>

#include "data/tokenizer/pre_tokenizer.h"
#include "data/tokenizer/tokenizer_unicode.h"

namespace loom::data {
namespace {

enum class CharClass : uint8_t { kLetter, kNumber, kSpace, kOther };

CharClass classify_slow(char32_t cp) {
  if (unicode::is_white_space(cp)) return CharClass::kSpace;
  if (unicode::is_letter(cp)) return CharClass::kLetter;
  if (unicode::is_number(cp)) return CharClass::kNumber;
  return CharClass::kOther;
}

const std::array<CharClass, 128>& ascii_classes() {
  static const std::array<CharClass, 128> table = [] {
    std::array<CharClass, 128> t{};
    for (int c = 0; c < 128; ++c) t[c] = classify_slow(static_cast<char32_t>(c));
    return t;
  }();
  return table;
}

// Class of the character at s[i]; sets `next` to the index after it.
inline CharClass class_at(std::string_view s, size_t i, size_t& next) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) {
    next = i + 1;
    return ascii_classes()[c];
  }
  next = i;
  char32_t cp = unicode::decode_utf8(s, next);
  return classify_slow(cp);
}

// Length of a contraction ('s 't 're 've 'm 'll 'd) at s[i] == '\'', or 0.
size_t contraction_length(std::string_view s, size_t i) {
  if (i + 1 >= s.size()) return 0;
  char a = s[i + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 >= s.size()) return 0;
  char b = s[i + 2];
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// End of the run of characters of class `cls` starting at i.
size_t run_end(std::string_view s, size_t i, CharClass cls) {
  size_t next = i;
  while (i < s.size() && class_at(s, i, next) == cls) i = next;
  return i;
}

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space), use_regex_(use_regex) {}

  void split(std::string_view text, const std::vector<Piece>& in,
             std::vector<Piece>& out) const override {
    out.clear();
    for (const Piece& p : in) {
      std::string_view s = text.substr(p.begin, p.end - p.begin);
      bool prefix = p.prefix_space || (add_prefix_space_ && !s.starts_with(' '));
      size_t first = out.size();
      if (!use_regex_) {
        out.push_back({p.begin, p.end, prefix, true});
        continue;
      }
      if (!prefix) {
        split_gpt2_pattern(s, p.begin, out);
      } else {
        // Match over " " + s; position k of that string is byte p.begin + k - 1.
        scratch_.assign(1, ' ');
        scratch_.append(s);
        split_gpt2_pattern(scratch_, 0, out);
        for (size_t k = first; k < out.size(); ++k) {
          Piece& q = out[k];
          q.prefix_space = q.begin == 0;
          q.begin = q.begin == 0 ? p.begin : p.begin + q.begin - 1;
          q.end = p.begin + q.end - 1;
        }
      }
      for (size_t k = first; k < out.size(); ++k) out[k].byte_level = true;
    }
  }

 private:
  bool add_prefix_space_;
  bool use_regex_;
  static thread_local std::string scratch_;
};

thread_local std::string ByteLevelPreTokenizer::scratch_;

}  // namespace

void split_gpt2_pattern(std::string_view s, uint32_t base, std::vector<Piece>& out) {
  const size_t n = s.size();
  size_t i = 0;
  auto emit = [&](size_t b, size_t e) {
    out.push_back({base + static_cast<uint32_t>(b), base + static_cast<uint32_t>(e)});
  };
  while (i < n) {
    if (s[i] == '\'') {
      if (size_t len = contraction_length(s, i)) {
        emit(i, i + len);
        i += len;
        continue;
      }
    }
    size_t next = i;
    CharClass cls = class_at(s, i, next);
    if (s[i] == ' ' && next < n) {
      size_t after = next;
      CharClass cls2 = class_at(s, next, after);
      if (cls2 != CharClass::kSpace) {  // " ?\p{L}+", " ?\p{N}+", " ?[^\s\p{L}\p{N}]+"
        size_t end = run_end(s, next, cls2);
        emit(i, end);
        i = end;
        continue;
      }
    }
    if (cls != CharClass::kSpace) {
      size_t end = run_end(s, i, cls);
      emit(i, end);
      i = end;
      continue;
    }
    // Whitespace run [i, k); last_start is where its last character begins.
    size_t k = i;
    size_t last_start = i;
    while (k < n) {
      size_t after = k;
      if (class_at(s, k, after) != CharClass::kSpace) break;
      last_start = k;
      k = after;
    }
    size_t end = (k == n || last_start == i) ? k : last_start;
    emit(i, end);
    i = end;
  }
}

std::unique_ptr<PreTokenizer> make_byte_level_pre_tokenizer(bool add_prefix_space, bool use_regex) {
  return std::make_unique<ByteLevelPreTokenizer>(add_prefix_space, use_regex);
}

}  // namespace loom::data
