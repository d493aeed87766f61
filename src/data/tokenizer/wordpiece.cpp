// WordPiece model implementation; see data/wordpiece.h.
#include "data/tokenizer/wordpiece.h"

#include <algorithm>

#include "data/tokenizer/tokenizer_unicode.h"
#include "loom/error.h"

namespace loom::data {

std::unique_ptr<WordPieceModel> WordPieceModel::build(const io::TokenizerModelSpec& spec,
                                                      const std::string& source) {
  std::unique_ptr<WordPieceModel> m(new WordPieceModel());
  m->vocab_.reserve(spec.vocab.size());
  for (const auto& [token, id] : spec.vocab) m->vocab_.insert(token, id);
  m->prefix_ = spec.continuing_subword_prefix.value_or("##");
  m->max_chars_ = static_cast<size_t>(std::max<int64_t>(0, spec.max_input_chars_per_word));
  const std::string unk = spec.unk_token.value_or("[UNK]");
  std::optional<int32_t> unk_id = m->vocab_.find(unk);
  LOOM_CHECK(unk_id, "[", source, "] WordPiece unk_token \"", unk, "\" is not in the vocabulary");
  m->unk_id_ = *unk_id;
  m->vocab_.map().for_each([&](std::string_view token, int32_t id) {
    m->max_bytes_ = std::max(m->max_bytes_, token.size());
    if (token.starts_with(m->prefix_)) {
      std::string_view tail = token.substr(m->prefix_.size());
      m->max_cont_bytes_ = std::max(m->max_cont_bytes_, tail.size());
      m->continuation_.insert_or_assign(tail, id);
    }
  });
  return m;
}

void WordPieceModel::tokenize(std::string_view word, bool /*byte_level*/,
                              std::vector<ModelToken>& out) const {
  if (word.empty()) return;
  const uint32_t n = static_cast<uint32_t>(word.size());
  size_t chars = 0;
  for (char c : word) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  if (chars > max_chars_) {
    out.push_back({unk_id_, 0, n});
    return;
  }
  const size_t first = out.size();
  size_t start = 0;
  while (start < word.size()) {
    const StringIdMap& table = start == 0 ? vocab_.map() : continuation_;
    const size_t longest = start == 0 ? max_bytes_ : max_cont_bytes_;
    size_t end = std::min(word.size(), start + longest);
    // Never end inside a UTF-8 sequence.
    while (end < word.size() && end > start &&
           (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80) {
      --end;
    }
    bool found = false;
    while (end > start) {
      int32_t id = table.find(word.substr(start, end - start));
      if (id >= 0) {
        out.push_back({id, static_cast<uint32_t>(start), static_cast<uint32_t>(end)});
        found = true;
        break;
      }
      do {
        --end;
      } while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80);
    }
    if (!found) {
      out.resize(first);
      out.push_back({unk_id_, 0, n});
      return;
    }
    start = end;
  }
}

}  // namespace loom::data
