// The encoding pipeline of TokenizerImpl: one sequence through added tokens, normalizer,
// pre-tokenizer and model; then truncation (tokenizers/src/utils/truncation.rs), the
// post-processor and padding (utils/padding.rs). See data/tokenizer_impl.h.
#include <algorithm>
#include <cstdint>

#include "data/tokenizer/tokenizer_impl.h"
#include "data/tokenizer/tokenizer_unicode.h"
#include "loom/error.h"

namespace loom::detail {
namespace {

// Per-thread buffers reused across calls.
struct Scratch {
  std::string repaired;
  std::string prefixed;
  std::vector<data::TextSegment> segments, subsegments;
  data::NormalizedText normalized;
  std::vector<data::Piece> pieces_in, pieces;
  std::vector<data::ModelToken> tokens;
};

void push_token(Encoding& out, int32_t id, int32_t type_id, bool offsets, uint32_t b, uint32_t e) {
  out.ids.push_back(id);
  out.type_ids.push_back(type_id);
  out.attention_mask.push_back(1);
  out.special_tokens_mask.push_back(0);
  if (offsets) out.offsets.push_back({b, e});
}

// Original byte range of normalized bytes [b, e) (b == e: a zero-width position).
void original_range(const data::NormalizedText& nt, uint32_t b, uint32_t e, uint32_t& ob,
                    uint32_t& oe) {
  if (b < e) return nt.to_original(b, e, ob, oe);
  uint32_t n = static_cast<uint32_t>(nt.text().size());
  if (!nt.aligned) {
    ob = oe = b;
  } else {
    ob = oe = b < n ? nt.align_begin[b] : static_cast<uint32_t>(nt.original.size());
  }
}

bool is_continuation(std::string_view s, uint32_t i) {
  return i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80;
}

// Moves b back and e forward to UTF-8 character boundaries of s.
void widen_to_chars(std::string_view s, uint32_t& b, uint32_t& e) {
  while (b > 0 && is_continuation(s, b)) --b;
  while (is_continuation(s, e)) ++e;
}

// Keeps `keep` tokens of `s`, from the start (kRight) or the end (kLeft).
void truncate_encoding(data::SequenceEncoding& s, size_t keep, Side direction) {
  Encoding& e = s.enc;
  if (e.size() <= keep) return;
  auto cut = [&](auto& v) {
    if (v.empty()) return;
    if (direction == Side::kRight) {
      v.resize(keep);
    } else {
      v.erase(v.begin(), v.end() - static_cast<std::ptrdiff_t>(keep));
    }
  };
  cut(e.ids);
  cut(e.type_ids);
  cut(e.attention_mask);
  cut(e.special_tokens_mask);
  cut(e.offsets);
  cut(s.spaces);
}

// tokenizers' truncate_encodings with max_length already reduced by the special tokens.
void truncate_pair(data::SequenceEncoding& a, data::SequenceEncoding* b, int64_t max_length,
                   const TruncationOptions& t, const std::string& source) {
  const size_t max_len = static_cast<size_t>(max_length);
  const size_t total = a.enc.size() + (b ? b->enc.size() : 0);
  if (total <= max_len) return;
  const size_t to_remove = total - max_len;
  if (t.strategy == TruncationStrategy::kLongestFirst) {
    if (b == nullptr) return truncate_encoding(a, max_len, t.direction);
    size_t n1 = a.enc.size(), n2 = b->enc.size();
    bool swap = n1 > n2;
    if (swap) std::swap(n1, n2);
    n2 = n1 > max_len ? n1 : std::max(n1, max_len - n1);
    if (n1 + n2 > max_len) {
      n1 = max_len / 2;
      n2 = n1 + max_len % 2;
    }
    if (swap) std::swap(n1, n2);
    truncate_encoding(a, n1, t.direction);
    truncate_encoding(*b, n2, t.direction);
    return;
  }
  LOOM_CHECK(t.strategy == TruncationStrategy::kOnlyFirst || b != nullptr, "[", source,
             "] truncation only_second needs a pair of sequences");
  data::SequenceEncoding& target = t.strategy == TruncationStrategy::kOnlyFirst ? a : *b;
  LOOM_CHECK(target.enc.size() > to_remove, "[", source, "] truncation ",
             t.strategy == TruncationStrategy::kOnlyFirst ? "only_first" : "only_second",
             ": the sequence to cut has ", target.enc.size(), " tokens but ", to_remove,
             " must go to reach max_length ", t.max_length);
  truncate_encoding(target, target.enc.size() - to_remove, t.direction);
}

}  // namespace

namespace {

// Appends tokens of one sequence: ids, masks, offsets (when requested) and the whitespace
// counts used by offset trimming (when the post-processor trims).
struct SequenceWriter {
  data::SequenceEncoding& seq;
  int32_t type_id;
  bool offsets;
  bool trim;
  const std::vector<data::TokenSpaces>& id_spaces;

  void add(int32_t id, uint32_t b, uint32_t e) {
    push_token(seq.enc, id, type_id, offsets, b, e);
    if (trim) {
      seq.spaces.push_back(static_cast<size_t>(id) < id_spaces.size() ? id_spaces[id]
                                                                      : data::TokenSpaces{});
    }
  }
  // An added token matched as `matched` (its own text decides the trimming).
  void add_matched(int32_t id, uint32_t b, uint32_t e, std::string_view matched) {
    push_token(seq.enc, id, type_id, offsets, b, e);
    if (trim) seq.spaces.push_back(data::count_token_spaces(matched));
  }
};

// Runs the model over one pre-token of normalized text `nt` (whose original starts at
// byte `base`) and appends its tokens.
void encode_piece(const TokenizerImpl& impl, const data::NormalizedText& nt, uint32_t base,
                  const data::Piece& piece, Scratch& sc, SequenceWriter& w) {
  std::string_view ntext = nt.text();
  std::string_view word = ntext.substr(piece.begin, piece.end - piece.begin);
  uint32_t shift = 0;  // bytes of virtual prefix space before the piece
  if (piece.prefix_space) {
    sc.prefixed.assign(1, ' ');
    sc.prefixed.append(word);
    word = sc.prefixed;
    shift = 1;
  }
  sc.tokens.clear();
  impl.model->tokenize(word, piece.byte_level, sc.tokens);
  uint32_t ob = 0, oe = 0;
  for (const data::ModelToken& t : sc.tokens) {
    if (w.offsets) {
      uint32_t b = piece.begin + std::max(t.begin, shift) - shift;
      uint32_t e = piece.begin + std::max(t.end, shift) - shift;
      // A byte-level token may hold part of a character; tokenizers aligns each byte with
      // its whole character, so widen to character boundaries.
      if (piece.byte_level) widen_to_chars(ntext, b, e);
      original_range(nt, b, e, ob, oe);
    }
    w.add(t.id, base + ob, base + oe);
  }
}

// Normalizes one segment of text between raw added tokens and encodes it.
void encode_segment(const TokenizerImpl& impl, std::string_view part, uint32_t base, Scratch& sc,
                    SequenceWriter& w) {
  data::NormalizedText& nt = sc.normalized;
  if (impl.normalizer) {
    impl.normalizer->normalize(part, nt);
  } else {
    nt.original = part;
    nt.changed = nt.aligned = false;
  }
  std::string_view ntext = nt.text();
  sc.subsegments.clear();
  impl.added.split(ntext, true, sc.subsegments);
  for (const data::TextSegment& sub : sc.subsegments) {
    if (sub.id >= 0) {
      uint32_t ob = 0, oe = 0;
      original_range(nt, sub.begin, sub.end, ob, oe);
      w.add_matched(sub.id, base + ob, base + oe, ntext.substr(sub.begin, sub.end - sub.begin));
      continue;
    }
    sc.pieces_in.assign(1, data::Piece{sub.begin, sub.end});
    if (impl.pre_tokenizer) {
      impl.pre_tokenizer->split(ntext, sc.pieces_in, sc.pieces);
    } else {
      sc.pieces.swap(sc.pieces_in);
    }
    for (const data::Piece& piece : sc.pieces) encode_piece(impl, nt, base, piece, sc, w);
  }
}

}  // namespace

void TokenizerImpl::encode_sequence(std::string_view input, int32_t type_id, bool offsets,
                                    data::SequenceEncoding& seq) const {
  LOOM_CHECK(input.size() < UINT32_MAX / 2, "[", source, "] text of ", input.size(),
             " bytes is too long to tokenize");
  thread_local Scratch sc;
  std::string_view text = input;
  if (!data::unicode::is_valid_utf8(input)) {
    data::unicode::repair_utf8(input, sc.repaired);
    text = sc.repaired;
  }
  SequenceWriter w{seq, type_id, offsets, offsets && !spaces.empty(), spaces};
  sc.segments.clear();
  added.split(text, false, sc.segments);
  for (const data::TextSegment& seg : sc.segments) {
    std::string_view part = text.substr(seg.begin, seg.end - seg.begin);
    if (seg.id >= 0) {
      w.add_matched(seg.id, seg.begin, seg.end, part);
    } else {
      encode_segment(*this, part, seg.begin, sc, w);
    }
  }
}

Encoding TokenizerImpl::encode(std::string_view first, const std::string_view* second,
                               const EncodeOptions& options, bool pad) const {
  data::SequenceEncoding a, b;
  encode_sequence(first, 0, options.return_offsets, a);
  if (second != nullptr) encode_sequence(*second, 1, options.return_offsets, b);
  data::SequenceEncoding* bp = second != nullptr ? &b : nullptr;
  if (options.truncation) {
    const TruncationOptions& t = *options.truncation;
    int64_t added_n = (options.add_special_tokens && post_processor)
                          ? post_processor->added_tokens(bp != nullptr)
                          : 0;
    LOOM_CHECK(t.max_length >= added_n, "[", source, "] truncation max_length ", t.max_length,
               " is smaller than the ", added_n, " special tokens added to each input");
    truncate_pair(a, bp, t.max_length - added_n, t, source);
  }
  Encoding out;
  if (post_processor) {
    post_processor->process(a, bp, options.add_special_tokens, options.return_offsets, out);
  } else {
    data::concat_encodings(a, bp, out);
  }
  if (pad && options.padding) {
    std::vector<Encoding> one(1);
    one[0] = std::move(out);
    pad_batch(one, *options.padding, options.return_offsets);
    out = std::move(one[0]);
  }
  return out;
}

void TokenizerImpl::pad_batch(std::vector<Encoding>& batch, const PaddingOptions& p,
                              bool offsets) const {
  if (batch.empty()) return;
  int32_t pad_id = p.pad_id;
  if (pad_id < 0) {
    LOOM_CHECK(pad, "[", source,
               "] padding needs a pad token, and this tokenizer has none; "
               "set PaddingOptions::pad_id");
    pad_id = *pad;
  }
  LOOM_CHECK(p.length >= 0 && p.pad_to_multiple_of >= 0, "[", source,
             "] padding length and pad_to_multiple_of must be >= 0, got ", p.length, " and ",
             p.pad_to_multiple_of);
  size_t target = static_cast<size_t>(p.length);
  if (p.strategy == PaddingOptions::Strategy::kLongest) {
    target = 0;
    for (const Encoding& e : batch) target = std::max(target, e.size());
  }
  if (p.pad_to_multiple_of > 0) {
    size_t m = static_cast<size_t>(p.pad_to_multiple_of);
    if (target % m != 0) target += m - target % m;
  }
  for (Encoding& e : batch) {
    if (e.size() >= target) continue;
    size_t n = target - e.size();
    auto grow = [&](auto& v, auto value) {
      if (p.direction == Side::kRight) {
        v.insert(v.end(), n, value);
      } else {
        v.insert(v.begin(), n, value);
      }
    };
    grow(e.ids, pad_id);
    grow(e.type_ids, p.pad_type_id);
    grow(e.attention_mask, 0);
    grow(e.special_tokens_mask, 1);
    if (offsets) grow(e.offsets, TokenOffset{0, 0});
  }
}

}  // namespace loom::detail
