// AddedVocab implementation; see data/tokenizer_added_vocab.h.
#include "data/tokenizer/tokenizer_added_vocab.h"

#include <algorithm>

#include "data/tokenizer/normalizer.h"
#include "data/tokenizer/tokenizer_unicode.h"

namespace loom::data {
namespace {

// Last code point of s[0..end) (end > 0, valid UTF-8).
char32_t last_char(std::string_view s, size_t end) {
  size_t b = end - 1;
  while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  return unicode::decode_utf8(s, b);
}

// Start of the whitespace run that ends at `end`.
size_t whitespace_start_before(std::string_view s, size_t end) {
  while (end > 0) {
    size_t b = end - 1;
    while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
    size_t i = b;
    if (!unicode::is_white_space(unicode::decode_utf8(s, i))) break;
    end = b;
  }
  return end;
}

// End of the whitespace run that starts at `begin`.
size_t whitespace_end_after(std::string_view s, size_t begin) {
  while (begin < s.size()) {
    size_t next = begin;
    if (!unicode::is_white_space(unicode::decode_utf8(s, next))) break;
    begin = next;
  }
  return begin;
}

}  // namespace

void AddedVocab::Trie::add(std::string_view pattern, int32_t token) {
  if (pattern.empty()) return;
  int32_t node = 0;
  for (char ch : pattern) {
    unsigned char c = static_cast<unsigned char>(ch);
    auto& kids = nodes[node].children;
    auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(c, int32_t{-1}));
    if (it != kids.end() && it->first == c) {
      node = it->second;
    } else {
      int32_t child = static_cast<int32_t>(nodes.size());
      kids.insert(it, {c, child});
      nodes.push_back(Node{});
      node = child;
    }
  }
  if (nodes[node].token < 0) nodes[node].token = token;
  first[static_cast<unsigned char>(pattern[0])] = true;
  empty = false;
}

int32_t AddedVocab::Trie::longest(std::string_view text, size_t i, size_t& length) const {
  int32_t node = 0;
  int32_t best = -1;
  for (size_t k = i; k < text.size(); ++k) {
    unsigned char c = static_cast<unsigned char>(text[k]);
    const auto& kids = nodes[node].children;
    auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(c, int32_t{-1}));
    if (it == kids.end() || it->first != c) break;
    node = it->second;
    if (nodes[node].token >= 0) {
      best = nodes[node].token;
      length = k + 1 - i;
    }
  }
  return best;
}

AddedVocab::AddedVocab(const std::vector<io::AddedTokenSpec>& tokens,
                       const NormalizerChain* normalizer)
    : tokens_(tokens) {
  for (size_t k = 0; k < tokens_.size(); ++k) {
    const io::AddedTokenSpec& t = tokens_[k];
    by_content_[t.content] = t.id;
    by_id_[t.id] = k;
    if (t.normalized) {
      std::string pattern = normalizer ? normalizer->normalize_string(t.content) : t.content;
      normalized_.add(pattern, static_cast<int32_t>(k));
      surfaces_.push_back(pattern);
    } else {
      raw_.add(t.content, static_cast<int32_t>(k));
      surfaces_.push_back(t.content);
    }
  }
}

void AddedVocab::split(std::string_view text, bool normalized,
                       std::vector<TextSegment>& out) const {
  const Trie& trie = normalized ? normalized_ : raw_;
  const uint32_t n = static_cast<uint32_t>(text.size());
  if (n == 0) return;
  if (trie.empty) {
    out.push_back({0, n, -1});
    return;
  }
  size_t done = 0;  // end of the last emitted segment
  size_t i = 0;
  while (i < text.size()) {
    if (!trie.first[static_cast<unsigned char>(text[i])]) {
      ++i;
      continue;
    }
    size_t length = 0;
    int32_t k = trie.longest(text, i, length);
    if (k < 0) {
      ++i;
      continue;
    }
    const io::AddedTokenSpec& t = tokens_[k];
    size_t start = i, stop = i + length;
    i = stop;  // matching resumes after this match, used or not
    if (t.single_word) {
      bool word_before = start > 0 && unicode::is_word_char(last_char(text, start));
      size_t after = stop;
      bool word_after =
          stop < text.size() && unicode::is_word_char(unicode::decode_utf8(text, after));
      if (word_before || word_after) continue;
    }
    if (t.lstrip) start = std::max(whitespace_start_before(text, start), done);
    if (t.rstrip) stop = whitespace_end_after(text, stop);
    if (done < start)
      out.push_back({static_cast<uint32_t>(done), static_cast<uint32_t>(start), -1});
    out.push_back({static_cast<uint32_t>(start), static_cast<uint32_t>(stop), t.id});
    done = stop;
    i = std::max(i, stop);
  }
  if (done < text.size()) out.push_back({static_cast<uint32_t>(done), n, -1});
}

int32_t AddedVocab::find(std::string_view content) const {
  auto it = by_content_.find(content);
  return it == by_content_.end() ? -1 : it->second;
}

const io::AddedTokenSpec* AddedVocab::token(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

const std::string* AddedVocab::surface(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &surfaces_[it->second];
}

bool AddedVocab::is_special(int32_t id) const {
  const io::AddedTokenSpec* t = token(id);
  return t != nullptr && t->special;
}

}  // namespace loom::data
