// BertPreTokenizer, WhitespaceSplit and Sequence, and the pre-tokenizer factory.
// BertPreTokenizer (tokenizers/src/pre_tokenizers/bert.rs): split on White_Space (removed),
// then isolate every punctuation character (ASCII punctuation or a P* category).
// WhitespaceSplit (whitespace.rs): split on White_Space (removed).
#include "data/tokenizer/pre_tokenizer.h"

#include <array>

#include "data/tokenizer/tokenizer_unicode.h"
#include "loom/error.h"

namespace loom::data {
namespace {

enum class SplitClass : uint8_t { kWord, kSpace, kPunct };

SplitClass bert_class(char32_t cp, bool punctuation) {
  if (unicode::is_white_space(cp)) return SplitClass::kSpace;
  if (punctuation && unicode::is_bert_punctuation(cp)) return SplitClass::kPunct;
  return SplitClass::kWord;
}

// Splits each piece at whitespace (dropped) and, when `punctuation`, around punctuation.
class WhitespacePunctSplitter final : public PreTokenizer {
 public:
  explicit WhitespacePunctSplitter(bool punctuation) : punctuation_(punctuation) {
    for (int c = 0; c < 128; ++c) ascii_[c] = bert_class(static_cast<char32_t>(c), punctuation);
  }

  void split(std::string_view text, const std::vector<Piece>& in,
             std::vector<Piece>& out) const override {
    out.clear();
    for (const Piece& p : in) {
      uint32_t word_start = p.begin;
      uint32_t i = p.begin;
      while (i < p.end) {
        unsigned char c = static_cast<unsigned char>(text[i]);
        size_t next = i;
        SplitClass cls;
        if (c < 0x80) {
          cls = ascii_[c];
          next = i + 1;
        } else {
          cls = bert_class(unicode::decode_utf8(text, next), punctuation_);
        }
        if (cls != SplitClass::kWord) {
          if (word_start < i) out.push_back({word_start, i});
          if (cls == SplitClass::kPunct) out.push_back({i, static_cast<uint32_t>(next)});
          word_start = static_cast<uint32_t>(next);
        }
        i = static_cast<uint32_t>(next);
      }
      if (word_start < p.end) out.push_back({word_start, p.end});
    }
  }

 private:
  bool punctuation_;
  std::array<SplitClass, 128> ascii_{};
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps)
      : steps_(std::move(steps)) {}

  void split(std::string_view text, const std::vector<Piece>& in,
             std::vector<Piece>& out) const override {
    if (steps_.empty()) {
      out = in;
      return;
    }
    std::vector<Piece> tmp;
    const std::vector<Piece>* src = &in;
    for (size_t k = 0; k < steps_.size(); ++k) {
      // Alternate between `out` and `tmp` so that the last step writes `out`.
      bool to_out = (steps_.size() - k) % 2 == 1;
      std::vector<Piece>& dst = to_out ? out : tmp;
      steps_[k]->split(text, *src, dst);
      src = &dst;
    }
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const io::PreTokenizerSpec& spec,
                                                 const std::string& source) {
  if (spec.type == "ByteLevel") {
    return make_byte_level_pre_tokenizer(spec.add_prefix_space, spec.use_regex);
  }
  if (spec.type == "BertPreTokenizer") return std::make_unique<WhitespacePunctSplitter>(true);
  if (spec.type == "WhitespaceSplit") return std::make_unique<WhitespacePunctSplitter>(false);
  if (spec.type == "Split") return make_split_pre_tokenizer(spec, source);
  if (spec.type == "Sequence") {
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (size_t k = 0; k < spec.children.size(); ++k) {
      const io::PreTokenizerSpec& child = spec.children[k];
      LOOM_CHECK(child.type != "ByteLevel" || k + 1 == spec.children.size(), "[", source,
                 "] pre_tokenizer: ByteLevel must be the last step of a Sequence in loom");
      steps.push_back(make_pre_tokenizer(child, source));
    }
    return std::make_unique<SequencePreTokenizer>(std::move(steps));
  }
  fail("[", source, "] pre_tokenizer: unsupported type '", spec.type, "'");
}

}  // namespace loom::data
