// libFuzzer harness: a tokenizer.json Split pre-tokenizer's pattern, as
// PCRE2 compiles and matches it (data/pre_tokenizer_split.cpp) at loom's real
// limits: the compile options of a Regex or String pattern, every behavior,
// invert, and the match / depth limits that grow with the subject. Byte 0
// picks Regex or String, the behavior and invert; the rest up to the first
// NUL is the pattern (any bytes, invalid UTF-8 included), what follows is the
// text it splits (with a long run of one character appended, which drives
// backtracking patterns into the match limit). A pattern that compiles must
// split the text into pieces inside it, in order; refusals are loom::Error.
#include <cstdlib>
#include <string>
#include <vector>

#include "data/tokenizer/pre_tokenizer.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const char* const kBehaviors[] = {"Removed", "Isolated", "MergedWithPrevious",
                                           "MergedWithNext", "Contiguous"};
  const uint8_t mode = data[0];
  std::string rest(loom::fuzz::as_text(data + 1, size - 1));
  const size_t nul = rest.find('\0');
  loom::io::PreTokenizerSpec spec;
  spec.type = "Split";
  spec.pattern = rest.substr(0, nul);
  spec.pattern_is_regex = (mode & 1) != 0;
  spec.behavior = kBehaviors[(mode >> 1) % 5];
  spec.invert = (mode & 0x80) != 0;
  std::string text = nul == std::string::npos ? "Hello, world! 123  abc\n" : rest.substr(nul + 1);
  if (!text.empty()) text += std::string(4096, text.back());
  loom::fuzz::run_guarded("split_pattern", [&] {
    auto split = loom::data::make_split_pre_tokenizer(spec, "<fuzz>");
    std::vector<loom::data::Piece> in{{0, static_cast<uint32_t>(text.size())}}, out;
    split->split(text, in, out);
    uint32_t last = 0;
    for (const loom::data::Piece& p : out) {
      if (p.begin > p.end || p.end > text.size() || p.begin < last) std::abort();
      last = p.end;
    }
  });
  return 0;
}
