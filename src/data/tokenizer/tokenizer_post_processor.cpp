// Post-processor implementations; see data/tokenizer_post_processor.h. Semantics from
// tokenizers/src/processors/{template,bert,roberta,byte_level,sequence}.rs:
//   TemplateProcessing: the template's sequence pieces take the piece's type id; special
//     pieces are added only with add_special_tokens (offsets {0,0}, special mask 1).
//   BertProcessing: [CLS] A [SEP] (type 0) + B [SEP] (type 1).
//   RobertaProcessing: optional offset trimming; every type id 0; <s> A </s> + </s> B </s>.
//   ByteLevel: offset trimming only (leading/trailing spaces removed from each token's
//     offsets; a single leading space of the first token kept when add_prefix_space).
#include "data/tokenizer/tokenizer_post_processor.h"

#include <algorithm>
#include <map>

#include "data/tokenizer/tokenizer_unicode.h"
#include "loom/error.h"

namespace loom::data {
namespace {

void set_type_ids(Encoding& e, int32_t type_id) {
  std::fill(e.type_ids.begin(), e.type_ids.end(), type_id);
}

void append_special(Encoding& out, const std::vector<int32_t>& ids, int32_t type_id, bool offsets) {
  for (int32_t id : ids) {
    out.ids.push_back(id);
    out.type_ids.push_back(type_id);
    out.attention_mask.push_back(1);
    out.special_tokens_mask.push_back(1);
    if (offsets) out.offsets.push_back({0, 0});
  }
}

// Trims whitespace from the offsets of each token (byte_level.rs process_offsets).
void trim_offsets(SequenceEncoding& s, bool add_prefix_space) {
  std::vector<TokenOffset>& offsets = s.enc.offsets;
  for (size_t i = 0; i < offsets.size() && i < s.spaces.size(); ++i) {
    const TokenSpaces sp = s.spaces[i];
    if (sp.leading == 0 && sp.trailing == 0) continue;
    TokenOffset& o = offsets[i];
    int64_t leading = sp.leading;
    if (leading > 0) {
      bool is_first = i == 0 || o.begin == 0;
      if (is_first && add_prefix_space && leading == 1) leading = 0;
      o.begin = std::min(o.begin + leading, o.end);
    }
    if (sp.trailing > 0 && o.end >= sp.trailing) o.end = std::max(o.end - sp.trailing, o.begin);
  }
}

class TemplateProcessor final : public PostProcessor {
 public:
  TemplateProcessor(const io::PostProcessorSpec& spec, const std::string& source)
      : single_(spec.single), pair_(spec.pair), specials_(spec.special_tokens) {
    for (const auto* tmpl : {&single_, &pair_}) {
      for (const io::TemplatePieceSpec& p : *tmpl) {
        if (p.is_sequence) continue;
        LOOM_CHECK(specials_.count(p.id), "[", source,
                   "] post_processor: template uses special token \"", p.id,
                   "\" missing from special_tokens");
      }
    }
  }
  int64_t added_tokens(bool pair) const override {
    int64_t n = 0;
    for (const io::TemplatePieceSpec& p : pair ? pair_ : single_) {
      if (!p.is_sequence) n += static_cast<int64_t>(specials_.at(p.id).size());
    }
    return n;
  }
  void process(SequenceEncoding& a, SequenceEncoding* b, bool add_special, bool offsets,
               Encoding& out) const override {
    for (const io::TemplatePieceSpec& p : b ? pair_ : single_) {
      if (p.is_sequence) {
        SequenceEncoding* s = p.id == "A" ? &a : b;
        if (s == nullptr) continue;  // "B" in a single template
        set_type_ids(s->enc, p.type_id);
        append_encoding(out, s->enc);
      } else if (add_special) {
        append_special(out, specials_.at(p.id), p.type_id, offsets);
      }
    }
  }

 private:
  std::vector<io::TemplatePieceSpec> single_, pair_;
  std::map<std::string, std::vector<int32_t>> specials_;
};

class BertProcessor final : public PostProcessor {
 public:
  BertProcessor(int32_t cls, int32_t sep) : cls_(cls), sep_(sep) {}
  int64_t added_tokens(bool pair) const override { return pair ? 3 : 2; }
  void process(SequenceEncoding& a, SequenceEncoding* b, bool add_special, bool offsets,
               Encoding& out) const override {
    if (!add_special) return concat_encodings(a, b, out);
    append_special(out, {cls_}, 0, offsets);
    set_type_ids(a.enc, 0);
    append_encoding(out, a.enc);
    append_special(out, {sep_}, 0, offsets);
    if (b != nullptr) {
      set_type_ids(b->enc, 1);
      append_encoding(out, b->enc);
      append_special(out, {sep_}, 1, offsets);
    }
  }

 private:
  int32_t cls_, sep_;
};

class RobertaProcessor final : public PostProcessor {
 public:
  explicit RobertaProcessor(const io::PostProcessorSpec& spec)
      : cls_(spec.cls.second),
        sep_(spec.sep.second),
        trim_(spec.trim_offsets),
        prefix_(spec.add_prefix_space) {}
  int64_t added_tokens(bool pair) const override { return pair ? 4 : 2; }
  bool trims_offsets() const override { return trim_; }
  void process(SequenceEncoding& a, SequenceEncoding* b, bool add_special, bool offsets,
               Encoding& out) const override {
    if (trim_) {
      trim_offsets(a, prefix_);
      if (b != nullptr) trim_offsets(*b, prefix_);
    }
    set_type_ids(a.enc, 0);
    if (b != nullptr) set_type_ids(b->enc, 0);
    if (!add_special) return concat_encodings(a, b, out);
    append_special(out, {cls_}, 0, offsets);
    append_encoding(out, a.enc);
    append_special(out, {sep_}, 0, offsets);
    if (b != nullptr) {
      append_special(out, {sep_}, 0, offsets);
      append_encoding(out, b->enc);
      append_special(out, {sep_}, 0, offsets);
    }
  }

 private:
  int32_t cls_, sep_;
  bool trim_, prefix_;
};

// ByteLevel: trims offsets, then hands over to `next` (a Sequence's later steps) or
// concatenates.
class ByteLevelProcessor final : public PostProcessor {
 public:
  ByteLevelProcessor(bool trim, bool prefix, std::unique_ptr<PostProcessor> next)
      : trim_(trim), prefix_(prefix), next_(std::move(next)) {}
  int64_t added_tokens(bool pair) const override { return next_ ? next_->added_tokens(pair) : 0; }
  bool trims_offsets() const override { return trim_ || (next_ && next_->trims_offsets()); }
  void process(SequenceEncoding& a, SequenceEncoding* b, bool add_special, bool offsets,
               Encoding& out) const override {
    if (trim_) {
      trim_offsets(a, prefix_);
      if (b != nullptr) trim_offsets(*b, prefix_);
    }
    if (next_ != nullptr) return next_->process(a, b, add_special, offsets, out);
    concat_encodings(a, b, out);
  }

 private:
  bool trim_, prefix_;
  std::unique_ptr<PostProcessor> next_;
};

// A Sequence [ByteLevel..., last]: each ByteLevel wraps the rest of the chain.
std::unique_ptr<PostProcessor> make_sequence(const io::PostProcessorSpec& spec, size_t k,
                                             const std::string& source) {
  if (k == spec.children.size()) {
    return std::make_unique<ByteLevelProcessor>(false, false, nullptr);
  }
  const io::PostProcessorSpec& child = spec.children[k];
  if (child.type == "ByteLevel") {
    return std::make_unique<ByteLevelProcessor>(child.trim_offsets, child.add_prefix_space,
                                                make_sequence(spec, k + 1, source));
  }
  LOOM_CHECK(k + 1 == spec.children.size(), "[", source,
             "] post_processor: in a Sequence only the last step may be other than ByteLevel "
             "in loom");
  return make_post_processor(child, source);
}

}  // namespace

TokenSpaces count_token_spaces(std::string_view token) {
  std::vector<char32_t> cps;
  for (size_t i = 0; i < token.size();) cps.push_back(unicode::decode_utf8(token, i));
  auto is_space = [](char32_t c) { return c == 0x120 || unicode::is_white_space(c); };
  size_t lead = 0;
  while (lead < cps.size() && is_space(cps[lead])) ++lead;
  size_t trail = 0;
  while (trail < cps.size() && is_space(cps[cps.size() - 1 - trail])) ++trail;
  return {static_cast<uint8_t>(std::min<size_t>(lead, 255)),
          static_cast<uint8_t>(std::min<size_t>(trail, 255))};
}

void append_encoding(Encoding& dst, const Encoding& src) {
  dst.ids.insert(dst.ids.end(), src.ids.begin(), src.ids.end());
  dst.type_ids.insert(dst.type_ids.end(), src.type_ids.begin(), src.type_ids.end());
  dst.attention_mask.insert(dst.attention_mask.end(), src.attention_mask.begin(),
                            src.attention_mask.end());
  dst.special_tokens_mask.insert(dst.special_tokens_mask.end(), src.special_tokens_mask.begin(),
                                 src.special_tokens_mask.end());
  dst.offsets.insert(dst.offsets.end(), src.offsets.begin(), src.offsets.end());
}

void concat_encodings(SequenceEncoding& a, SequenceEncoding* b, Encoding& out) {
  if (b == nullptr) {
    out = std::move(a.enc);
    return;
  }
  append_encoding(out, a.enc);
  append_encoding(out, b->enc);
}

std::unique_ptr<PostProcessor> make_post_processor(const io::PostProcessorSpec& spec,
                                                   const std::string& source) {
  if (spec.type == "TemplateProcessing") return std::make_unique<TemplateProcessor>(spec, source);
  if (spec.type == "BertProcessing") {
    return std::make_unique<BertProcessor>(spec.cls.second, spec.sep.second);
  }
  if (spec.type == "RobertaProcessing") return std::make_unique<RobertaProcessor>(spec);
  if (spec.type == "ByteLevel") {
    return std::make_unique<ByteLevelProcessor>(spec.trim_offsets, spec.add_prefix_space, nullptr);
  }
  if (spec.type == "Sequence") return make_sequence(spec, 0, source);
  fail("[", source, "] post_processor: unsupported type '", spec.type, "'");
}

}  // namespace loom::data
