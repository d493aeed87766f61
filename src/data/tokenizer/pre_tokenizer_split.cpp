// Split pre-tokenizer (tokenizers/src/pre_tokenizers/split.rs): cut each piece at the
// matches of a pattern and keep, drop or merge the matches by `behavior`. Llama-3 and Qwen2
// use it with a Unicode regex (\p{L}, \p{N}, (?i:...), lookahead \s+(?!\S)) and Isolated.
//
// Regexes run on PCRE2 in UTF + UCP mode, so \s, \p{..} and case-insensitive groups follow
// Unicode properties as Oniguruma (the `tokenizers` engine) does for these patterns; a
// "String" pattern is matched literally (PCRE2_LITERAL). The compiled pattern is shared and
// read-only; each split() call has its own match data, so one tokenizer may encode on many
// threads. Assumes valid UTF-8 text (the tokenizer replaces invalid bytes first); an invalid
// subject still only throws loom::Error. Matches are found as Oniguruma's find_iter does
// (an empty match right where the previous match ended is skipped, one character on) and
// every match, empty or not, is a cut point, as in tokenizers' find_matches; only empty
// pieces are dropped, after the behavior is applied. The match limit grows with the
// subject (linearly, so bounded), as Oniguruma has none: the Llama-3 pattern's
// \s*[\r\n]+ backtracks over a whole whitespace run before \s+(?!\S) takes it.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cstdint>

#include "data/tokenizer/pre_tokenizer.h"
#include "loom/error.h"

namespace loom::data {
namespace {

enum class SplitBehavior : uint8_t {
  kRemoved,
  kIsolated,
  kMergedWithPrevious,
  kMergedWithNext,
  kContiguous
};

SplitBehavior split_behavior_of(const std::string& name, const std::string& source) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  fail("[", source, "] pre_tokenizer Split: unknown behavior '", name, "'");
}

struct SplitSegment {
  uint32_t begin, end;
  bool is_match;
};

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

// Folds segments as tokenizers' NormalizedString::split does for each behavior; every
// result is a kept piece (is_match is reused as "merge pending" scratch where needed).
void apply_split_behavior(SplitBehavior behavior, const std::vector<SplitSegment>& segs,
                          std::vector<Piece>& out) {
  auto push = [&](uint32_t b, uint32_t e) {
    if (b < e) out.push_back({b, e});
  };
  switch (behavior) {
    case SplitBehavior::kRemoved:
      for (const SplitSegment& s : segs) {
        if (!s.is_match) push(s.begin, s.end);
      }
      return;
    case SplitBehavior::kIsolated:
      for (const SplitSegment& s : segs) push(s.begin, s.end);
      return;
    case SplitBehavior::kMergedWithPrevious:
    case SplitBehavior::kContiguous: {
      const bool contiguous = behavior == SplitBehavior::kContiguous;
      std::vector<SplitSegment> acc;
      bool previous_match = false;
      for (const SplitSegment& s : segs) {
        bool merge = contiguous ? s.is_match == previous_match : s.is_match && !previous_match;
        if (merge && !acc.empty()) {
          acc.back().end = s.end;
        } else {
          acc.push_back(s);
        }
        previous_match = s.is_match;
      }
      for (const SplitSegment& s : acc) push(s.begin, s.end);
      return;
    }
    case SplitBehavior::kMergedWithNext: {
      std::vector<SplitSegment> acc;
      bool previous_match = false;
      for (size_t k = segs.size(); k-- > 0;) {
        const SplitSegment& s = segs[k];
        if (s.is_match && !previous_match && !acc.empty()) {
          acc.back().begin = s.begin;
        } else {
          acc.push_back(s);
        }
        previous_match = s.is_match;
      }
      for (size_t k = acc.size(); k-- > 0;) push(acc[k].begin, acc[k].end);
      return;
    }
  }
}

// The pattern as an error message shows it: whole up to 200 bytes, else its first 160
// bytes (cut at a UTF-8 character boundary), "..." and its length: a rejected pattern may
// be 960 kB, and the reason must come first, not after it.
std::string split_pattern_excerpt(const std::string& pattern) {
  constexpr size_t kWhole = 200, kHead = 160;
  if (pattern.size() <= kWhole) return "'" + pattern + "'";
  size_t n = kHead;
  while (n > 0 && (static_cast<unsigned char>(pattern[n]) & 0xC0) == 0x80) --n;
  return "'" + pattern.substr(0, n) + "'... (" + std::to_string(pattern.size()) + " bytes)";
}

class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(const io::PreTokenizerSpec& spec, const std::string& source)
      : behavior_(split_behavior_of(spec.behavior, source)), invert_(spec.invert), source_(source) {
    // PCRE2_LITERAL admits UTF but not UCP (no classes in a literal anyway). MULTILINE: in
    // Oniguruma's default (Ruby) syntax ^ and $ match at every line start and end.
    uint32_t options =
        PCRE2_UTF | (spec.pattern_is_regex ? PCRE2_UCP | PCRE2_MULTILINE : PCRE2_LITERAL);
    int error = 0;
    PCRE2_SIZE at = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(spec.pattern.data()), spec.pattern.size(),
                          options, &error, &at, nullptr);
    LOOM_CHECK(code_ != nullptr, "[", source, "] pre_tokenizer Split: cannot compile pattern (",
               pcre2_message(error), " at offset ", at, "): ", split_pattern_excerpt(spec.pattern));
    pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);  // optional: the interpreter is the fallback
  }
  ~SplitPreTokenizer() override { pcre2_code_free(code_); }
  SplitPreTokenizer(const SplitPreTokenizer&) = delete;
  SplitPreTokenizer& operator=(const SplitPreTokenizer&) = delete;

  void split(std::string_view text, const std::vector<Piece>& in,
             std::vector<Piece>& out) const override {
    out.clear();
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_, nullptr);
    pcre2_match_context* mctx = pcre2_match_context_create(nullptr);
    if (md == nullptr || mctx == nullptr) {
      pcre2_match_data_free(md);
      pcre2_match_context_free(mctx);
      fail("[", source_, "] pre_tokenizer Split: out of memory");
    }
    std::vector<SplitSegment> segs;
    try {
      for (const Piece& p : in) {
        segs.clear();
        find_segments(md, mctx, text.substr(p.begin, p.end - p.begin), p.begin, segs);
        apply_split_behavior(behavior_, segs, out);
      }
    } catch (...) {
      pcre2_match_data_free(md);
      pcre2_match_context_free(mctx);
      throw;
    }
    pcre2_match_data_free(md);
    pcre2_match_context_free(mctx);
  }

 private:
  // Segments of `s` (offset by `base`) alternating non-match / match (a match may be
  // empty), covering all of s: tokenizers' find_matches over Oniguruma's find_iter.
  void find_segments(pcre2_match_data* md, pcre2_match_context* mctx, std::string_view s,
                     uint32_t base, std::vector<SplitSegment>& segs) const {
    // PCRE2's default limits (10M) scaled with the subject: linear, so CPU stays bounded.
    const uint64_t limit = std::min<uint64_t>(10'000'000ull + 64ull * s.size(), UINT32_MAX);
    pcre2_set_match_limit(mctx, static_cast<uint32_t>(limit));
    pcre2_set_depth_limit(mctx, static_cast<uint32_t>(limit));
    auto subject = reinterpret_cast<PCRE2_SPTR>(s.data());
    size_t prev = 0, last_end = 0, last_match_end = 0;
    bool matched_before = false;
    uint32_t check = 0;  // the first call checks the UTF-8 of the whole subject, once
    while (last_end <= s.size()) {
      int rc = pcre2_match(code_, subject, s.size(), last_end, check, md, mctx);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      LOOM_CHECK(rc >= 0, "[", source_, "] pre_tokenizer Split: match failed: ", pcre2_message(rc));
      check = PCRE2_NO_UTF_CHECK;
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      size_t b = ov[0], e = ov[1];
      if (e == b && matched_before && last_match_end == e) {  // step over one character
        ++last_end;
        while (last_end < s.size() && (static_cast<unsigned char>(s[last_end]) & 0xC0) == 0x80) {
          ++last_end;
        }
        continue;
      }
      last_end = last_match_end = e;
      matched_before = true;
      if (prev < b) segs.push_back(segment(base, prev, b, false));
      segs.push_back(segment(base, b, e, true));
      prev = e;
    }
    if (prev < s.size()) segs.push_back(segment(base, prev, s.size(), false));
  }

  SplitSegment segment(uint32_t base, size_t b, size_t e, bool is_match) const {
    return {base + static_cast<uint32_t>(b), base + static_cast<uint32_t>(e), is_match != invert_};
  }

  pcre2_code* code_ = nullptr;
  SplitBehavior behavior_;
  bool invert_;
  std::string source_;
};

}  // namespace

std::unique_ptr<PreTokenizer> make_split_pre_tokenizer(const io::PreTokenizerSpec& spec,
                                                       const std::string& source) {
  return std::make_unique<SplitPreTokenizer>(spec, source);
}

}  // namespace loom::data
