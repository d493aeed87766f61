// Normalizers (BertNormalizer, Lowercase, NFC, NFD, NFKC, NFKD, StripAccents, Sequence) with
// alignment
// tracking. Rules follow tokenizers/src/normalizers/bert.rs: clean_text deletes NUL, U+FFFD
// and controls (Cc/Cf/Co except \t\n\r) and turns whitespace into ' '; handle_chinese_chars
// puts spaces around CJK ideographs; strip_accents is NFD then deletion of Mn; lowercase is
// Rust's per-character to_lowercase. StripAccents (strip.rs) deletes all marks (M*).
#include "data/tokenizer/normalizer.h"

#include <algorithm>

#include "data/tokenizer/tokenizer_unicode.h"
#include "loom/error.h"

namespace loom::data {
namespace {

namespace uc = unicode;

void lowercase_chars(std::vector<AlignedChar>& chars) {
  std::vector<AlignedChar> out;
  out.reserve(chars.size() + 2);
  for (const AlignedChar& c : chars) {
    char32_t lower[2];
    int n = uc::to_lower(c.cp, lower);
    for (int k = 0; k < n; ++k) out.push_back({lower[k], c.begin, c.end});
  }
  chars.swap(out);
}

template <typename Pred>
void erase_chars(std::vector<AlignedChar>& chars, Pred pred) {
  chars.erase(std::remove_if(chars.begin(), chars.end(), pred), chars.end());
}

class BertNormalizer final : public Normalizer {
 public:
  BertNormalizer(bool clean_text, bool chinese, bool strip_accents, bool lowercase)
      : clean_text_(clean_text), chinese_(chinese), strip_(strip_accents), lower_(lowercase) {}

  void apply(std::vector<AlignedChar>& chars) const override {
    if (clean_text_) {
      erase_chars(chars, [](const AlignedChar& c) {
        return c.cp == 0 || c.cp == 0xFFFD || uc::is_bert_control(c.cp);
      });
      for (AlignedChar& c : chars) {
        if (uc::is_bert_whitespace(c.cp)) c.cp = ' ';
      }
    }
    if (chinese_) {
      std::vector<AlignedChar> out;
      out.reserve(chars.size());
      for (const AlignedChar& c : chars) {
        if (uc::is_bert_chinese(c.cp)) {
          out.push_back({' ', c.begin, c.end});
          out.push_back(c);
          out.push_back({' ', c.begin, c.end});
        } else {
          out.push_back(c);
        }
      }
      chars.swap(out);
    }
    if (strip_) {
      decompose_chars(chars, false);
      erase_chars(chars, [](const AlignedChar& c) { return uc::is_mark_nonspacing(c.cp); });
    }
    if (lower_) lowercase_chars(chars);
  }

  int map_ascii(int b) const override {
    if (clean_text_) {
      if (b == 0 || uc::is_bert_control(static_cast<char32_t>(b))) return -1;
      if (uc::is_bert_whitespace(static_cast<char32_t>(b))) b = ' ';
    }
    if (lower_ && b >= 'A' && b <= 'Z') b += 32;
    return b;
  }

 private:
  bool clean_text_, chinese_, strip_, lower_;
};

class LowercaseNormalizer final : public Normalizer {
 public:
  void apply(std::vector<AlignedChar>& chars) const override { lowercase_chars(chars); }
  int map_ascii(int b) const override { return (b >= 'A' && b <= 'Z') ? b + 32 : b; }
};

class DecomposeNormalizer final : public Normalizer {
 public:
  explicit DecomposeNormalizer(bool compat) : compat_(compat) {}
  void apply(std::vector<AlignedChar>& chars) const override { decompose_chars(chars, compat_); }
  int map_ascii(int b) const override { return b; }

 private:
  bool compat_;
};

// NFC / NFKC: decomposition, canonical reordering, then canonical composition.
class ComposeNormalizer final : public Normalizer {
 public:
  explicit ComposeNormalizer(bool compat) : compat_(compat) {}
  void apply(std::vector<AlignedChar>& chars) const override {
    decompose_chars(chars, compat_);
    compose_chars(chars);
  }
  int map_ascii(int b) const override { return b; }

 private:
  bool compat_;
};

class StripAccentsNormalizer final : public Normalizer {
 public:
  void apply(std::vector<AlignedChar>& chars) const override {
    erase_chars(chars, [](const AlignedChar& c) { return uc::is_mark(c.cp); });
  }
  int map_ascii(int b) const override { return b; }
};

void add_steps(const io::NormalizerSpec& spec, const std::string& source,
               std::vector<std::unique_ptr<Normalizer>>& steps) {
  if (spec.type == "BertNormalizer") {
    bool strip = spec.strip_accents.value_or(spec.lowercase);
    steps.push_back(std::make_unique<BertNormalizer>(spec.clean_text, spec.handle_chinese_chars,
                                                     strip, spec.lowercase));
  } else if (spec.type == "Lowercase") {
    steps.push_back(std::make_unique<LowercaseNormalizer>());
  } else if (spec.type == "NFD" || spec.type == "NFKD") {
    steps.push_back(std::make_unique<DecomposeNormalizer>(spec.type == "NFKD"));
  } else if (spec.type == "NFC" || spec.type == "NFKC") {
    steps.push_back(std::make_unique<ComposeNormalizer>(spec.type == "NFKC"));
  } else if (spec.type == "StripAccents") {
    steps.push_back(std::make_unique<StripAccentsNormalizer>());
  } else if (spec.type == "Sequence") {
    for (const io::NormalizerSpec& child : spec.children) add_steps(child, source, steps);
  } else {
    fail("[", source, "] normalizer: unsupported type '", spec.type, "'");
  }
}

}  // namespace

void decompose_chars(std::vector<AlignedChar>& chars, bool compat) {
  std::vector<AlignedChar> out;
  out.reserve(chars.size() + 8);
  char32_t buffer[32];
  for (const AlignedChar& c : chars) {
    if (c.cp < 0xC0) {  // nothing below U+00C0 decomposes canonically or is reordered
      if (!compat || c.cp < 0xA0) {
        out.push_back(c);
        continue;
      }
    }
    int n = uc::decompose(c.cp, compat, buffer, 32);
    for (int k = 0; k < n && k < 32; ++k) out.push_back({buffer[k], c.begin, c.end});
  }
  // Canonical ordering: stable sort of each run of non-starters by combining class.
  size_t i = 0;
  while (i < out.size()) {
    if (uc::combining_class(out[i].cp) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < out.size() && uc::combining_class(out[j].cp) != 0) ++j;
    std::stable_sort(out.begin() + i, out.begin() + j,
                     [](const AlignedChar& a, const AlignedChar& b) {
                       return uc::combining_class(a.cp) < uc::combining_class(b.cp);
                     });
    i = j;
  }
  chars.swap(out);
}

void compose_chars(std::vector<AlignedChar>& chars) {
  std::vector<AlignedChar> out;
  out.reserve(chars.size());
  size_t starter = SIZE_MAX;  // index in `out` of the last starter
  int last_ccc = -1;          // class of the last character kept after it; -1: none
  for (const AlignedChar& c : chars) {
    int ccc = uc::combining_class(c.cp);
    // Blocked: a character between the starter and c has class 0 or >= c's class. No
    // composition has a second character below U+0300.
    bool blocked = last_ccc != -1 && (last_ccc == 0 || last_ccc >= ccc);
    if (starter != SIZE_MAX && !blocked && c.cp >= 0x300) {
      if (char32_t composite = uc::compose_pair(out[starter].cp, c.cp)) {
        out[starter].cp = composite;
        continue;
      }
    }
    if (ccc == 0) {
      starter = out.size();
      last_ccc = -1;
    } else {
      last_ccc = ccc;
    }
    out.push_back(c);
  }
  chars.swap(out);
}

NormalizerChain::NormalizerChain(std::vector<std::unique_ptr<Normalizer>> steps)
    : steps_(std::move(steps)) {
  for (int b = 0; b < 128; ++b) {
    int v = b;
    for (const auto& step : steps_) {
      if (v < 0) break;
      v = step->map_ascii(v);
    }
    ascii_[b] = static_cast<int16_t>(v);
    if (v != b) ascii_identity_ = false;
  }
}

void NormalizerChain::normalize(std::string_view in, NormalizedText& out) const {
  out.original = in;
  out.changed = false;
  out.aligned = false;
  bool ascii = std::all_of(in.begin(), in.end(),
                           [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  if (ascii) {
    if (ascii_identity_) return;
    out.changed = true;
    out.owned.clear();
    bool deleted = false;
    for (char c : in) {
      int v = ascii_[static_cast<unsigned char>(c)];
      if (v < 0) {
        deleted = true;
      } else {
        out.owned.push_back(static_cast<char>(v));
      }
    }
    if (!deleted) return;
    // Some bytes were deleted: record where each kept byte came from.
    out.aligned = true;
    out.align_begin.clear();
    out.align_end.clear();
    for (uint32_t i = 0; i < in.size(); ++i) {
      if (ascii_[static_cast<unsigned char>(in[i])] >= 0) {
        out.align_begin.push_back(i);
        out.align_end.push_back(i + 1);
      }
    }
    return;
  }
  std::vector<AlignedChar> chars;
  chars.reserve(in.size());
  for (size_t i = 0; i < in.size();) {
    uint32_t begin = static_cast<uint32_t>(i);
    char32_t cp = unicode::decode_utf8(in, i);
    chars.push_back({cp, begin, static_cast<uint32_t>(i)});
  }
  for (const auto& step : steps_) step->apply(chars);
  out.changed = true;
  out.aligned = true;
  out.owned.clear();
  out.align_begin.clear();
  out.align_end.clear();
  for (const AlignedChar& c : chars) {
    size_t before = out.owned.size();
    unicode::append_utf8(out.owned, c.cp);
    for (size_t k = before; k < out.owned.size(); ++k) {
      out.align_begin.push_back(c.begin);
      out.align_end.push_back(c.end);
    }
  }
}

std::string NormalizerChain::normalize_string(std::string_view in) const {
  NormalizedText t;
  normalize(in, t);
  return std::string(t.text());
}

std::unique_ptr<NormalizerChain> make_normalizer(const io::NormalizerSpec& spec,
                                                 const std::string& source) {
  std::vector<std::unique_ptr<Normalizer>> steps;
  add_steps(spec, source, steps);
  return std::make_unique<NormalizerChain>(std::move(steps));
}

}  // namespace loom::data
