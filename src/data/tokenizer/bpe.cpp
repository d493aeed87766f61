// BPE model implementation; see data/bpe.h. Initial-symbol rules follow `tokenizers`
// (models/bpe/model.rs merge_word): the continuing_subword_prefix goes on every character
// but the first, the end_of_word_suffix on the last; unknown characters become unk_token
// (consecutive ones fused when fuse_unk), or <0xXX> byte tokens when byte_fallback, or are
// dropped when there is no unk_token.
#include "data/tokenizer/bpe.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <queue>

#include "data/tokenizer/bpe_byte_level.h"
#include "data/tokenizer/tokenizer_unicode.h"
#include "loom/error.h"

namespace loom::data {
namespace {

// Words with more symbols than this merge with the heap algorithm.
constexpr size_t kSmallWord = 48;

}  // namespace

std::unique_ptr<BpeModel> BpeModel::build(const io::TokenizerModelSpec& spec,
                                          const std::string& source) {
  std::unique_ptr<BpeModel> m(new BpeModel());
  m->source_ = source;
  m->vocab_.reserve(spec.vocab.size());
  for (const auto& [token, id] : spec.vocab) m->vocab_.insert(token, id);
  m->prefix_ = spec.continuing_subword_prefix.value_or("");
  m->suffix_ = spec.end_of_word_suffix.value_or("");
  m->fuse_unk_ = spec.fuse_unk;
  m->byte_fallback_ = spec.byte_fallback;
  m->ignore_merges_ = spec.ignore_merges;
  m->unk_token_ = spec.unk_token;
  if (spec.unk_token) m->unk_id_ = m->vocab_.find(*spec.unk_token);
  m->merges_.reserve(spec.merges.size());
  for (size_t rank = 0; rank < spec.merges.size(); ++rank) {
    const auto& [a, b] = spec.merges[rank];
    std::optional<int32_t> ida = m->vocab_.find(a);
    std::optional<int32_t> idb = m->vocab_.find(b);
    LOOM_CHECK(ida && idb, "[", source, "] merge ", rank, " \"", a, " ", b, "\": token \"",
               ida ? b : a, "\" is not in the vocabulary");
    std::string_view tail = b;
    if (!m->prefix_.empty() && tail.starts_with(m->prefix_)) tail.remove_prefix(m->prefix_.size());
    std::string merged = a + std::string(tail);
    std::optional<int32_t> id = m->vocab_.find(merged);
    LOOM_CHECK(id, "[", source, "] merge ", rank, " \"", a, " ", b, "\": merged token \"", merged,
               "\" is not in the vocabulary");
    m->merges_.insert(*ida, *idb, {static_cast<int32_t>(rank), *id});
  }
  for (int byte = 0; byte < 256; ++byte) {
    std::optional<int32_t> id =
        m->vocab_.find(byte_level::byte_to_utf8(static_cast<uint8_t>(byte)));
    m->byte_ids_[byte] = id.value_or(-1);
  }
  return m;
}

int32_t BpeModel::unk_id_or_throw() const {
  LOOM_CHECK(unk_id_, "[", source_, "] unk_token \"", *unk_token_,
             "\" is needed for an unknown character but is not in the vocabulary");
  return *unk_id_;
}

// tokenizers' Word::add: a symbol's offsets are the running sum of the byte
// lengths of the symbols added before it, not its place in the piece. So a unit
// that adds nothing (an unknown character without unk_token) moves the later
// offsets back by its length, and a pending unknown run lands where it is added.
void BpeModel::push_symbol(std::vector<Symbol>& symbols, int32_t id, uint32_t len) {
  const uint32_t pos = symbols.empty() ? 0 : symbols.back().end;
  symbols.push_back({id, pos, pos + len});
}

// `unk` holds a pending unknown run as {unk id, 0, byte length}.
void BpeModel::flush_unk(std::optional<Symbol>& unk, std::vector<Symbol>& symbols) {
  if (unk) push_symbol(symbols, unk->id, unk->end - unk->begin);
  unk.reset();
}

bool BpeModel::push_byte_tokens(std::string_view unit, std::vector<Symbol>& symbols) const {
  int32_t ids[4];
  char name[8];
  const size_t n = std::min<size_t>(unit.size(), 4);
  for (size_t k = 0; k < n; ++k) {
    std::snprintf(name, sizeof(name), "<0x%02X>",
                  static_cast<unsigned>(static_cast<unsigned char>(unit[k])));
    std::optional<int32_t> id = vocab_.find(name);
    if (!id) return false;
    ids[k] = *id;
  }
  // One token of length 1 per byte. A pending unknown run is not flushed first:
  // tokenizers (models/bpe/model.rs, merge_word) adds it only at the next known
  // character or at the end, after these byte tokens.
  for (size_t k = 0; k < n; ++k) push_symbol(symbols, ids[k], 1);
  return true;
}

void BpeModel::initial_symbols(std::string_view piece, bool byte_level,
                               std::vector<Symbol>& symbols) const {
  symbols.clear();
  const bool plain = prefix_.empty() && suffix_.empty();
  std::optional<Symbol> unk;  // pending unknown run: {unk id, 0, byte length}
  std::string key;
  size_t i = 0;
  while (i < piece.size()) {
    size_t next = byte_level ? i + 1 : i + unicode::utf8_length(piece[i]);
    next = std::min(next, piece.size());
    const uint32_t len = static_cast<uint32_t>(next - i);
    std::optional<int32_t> id;
    if (byte_level && plain) {
      int32_t v = byte_ids_[static_cast<unsigned char>(piece[i])];
      if (v >= 0) id = v;
    } else {
      key.clear();
      if (i > 0) key += prefix_;
      if (byte_level) {
        key += byte_level::byte_to_utf8(static_cast<uint8_t>(piece[i]));
      } else {
        key.append(piece.substr(i, next - i));
      }
      if (next == piece.size()) key += suffix_;
      id = vocab_.find(key);
    }
    if (id) {
      flush_unk(unk, symbols);
      push_symbol(symbols, *id, len);
    } else if (byte_fallback_ && push_byte_tokens(piece.substr(i, next - i), symbols)) {
      // the unit's <0xXX> byte tokens were appended
    } else if (unk_token_) {
      int32_t uid = unk_id_or_throw();
      if (unk && fuse_unk_) {
        unk->end += len;
      } else {
        flush_unk(unk, symbols);
        unk = Symbol{uid, 0, len};
      }
    }
    i = next;
  }
  flush_unk(unk, symbols);
}

void BpeModel::merge_small(std::vector<Symbol>& s) const {
  // pair[k] describes the merge of s[k] and s[k+1] (rank INT_MAX: none).
  thread_local std::vector<BpeMergeTable::Merge> pair;
  pair.clear();
  auto lookup = [&](size_t k) {
    const BpeMergeTable::Merge* m = merges_.find(s[k].id, s[k + 1].id);
    return m ? *m : BpeMergeTable::Merge{INT_MAX, -1};
  };
  for (size_t k = 0; k + 1 < s.size(); ++k) pair.push_back(lookup(k));
  while (s.size() > 1) {
    size_t best = 0;
    for (size_t k = 1; k < pair.size(); ++k) {
      if (pair[k].rank < pair[best].rank) best = k;
    }
    if (pair[best].rank == INT_MAX) break;
    s[best].id = pair[best].new_id;
    s[best].end = s[best + 1].end;
    s.erase(s.begin() + static_cast<std::ptrdiff_t>(best) + 1);
    pair.erase(pair.begin() + static_cast<std::ptrdiff_t>(best));
    if (best + 1 < s.size()) pair[best] = lookup(best);
    if (best > 0) pair[best - 1] = lookup(best - 1);
  }
}

void BpeModel::merge_heap(std::vector<Symbol>& s) const {
  struct Candidate {
    int32_t rank;
    int32_t pos;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  const int32_t n = static_cast<int32_t>(s.size());
  std::vector<int32_t> prev(n), next(n);
  std::vector<bool> alive(n, true);
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  for (int32_t k = 0; k < n; ++k) {
    prev[k] = k - 1;
    next[k] = k + 1 < n ? k + 1 : -1;
    if (k + 1 < n) {
      if (const BpeMergeTable::Merge* m = merges_.find(s[k].id, s[k + 1].id)) {
        heap.push({m->rank, k});
      }
    }
  }
  while (!heap.empty()) {
    Candidate top = heap.top();
    heap.pop();
    int32_t i = top.pos;
    if (!alive[i] || next[i] < 0) continue;
    int32_t j = next[i];
    const BpeMergeTable::Merge* m = merges_.find(s[i].id, s[j].id);
    if (m == nullptr || m->rank != top.rank) continue;  // stale entry
    s[i].id = m->new_id;
    s[i].end = s[j].end;
    alive[j] = false;
    next[i] = next[j];
    if (next[j] >= 0) prev[next[j]] = i;
    if (prev[i] >= 0) {
      if (const BpeMergeTable::Merge* ml = merges_.find(s[prev[i]].id, s[i].id)) {
        heap.push({ml->rank, prev[i]});
      }
    }
    if (next[i] >= 0) {
      if (const BpeMergeTable::Merge* mr = merges_.find(s[i].id, s[next[i]].id)) {
        heap.push({mr->rank, i});
      }
    }
  }
  size_t out = 0;
  for (int32_t k = 0; k < n; ++k) {
    if (alive[k]) s[out++] = s[k];
  }
  s.resize(out);
}

void BpeModel::merge(std::vector<Symbol>& symbols, bool use_heap) const {
  if (symbols.size() < 2) return;
  if (use_heap) {
    merge_heap(symbols);
  } else {
    merge_small(symbols);
  }
}

void BpeModel::tokenize(std::string_view piece, bool byte_level,
                        std::vector<ModelToken>& out) const {
  if (piece.empty()) return;
  const BpeWordCache& cache = cache_[byte_level ? 1 : 0];
  if (cache.lookup(piece, 0, out)) return;
  const size_t first = out.size();
  if (ignore_merges_) {
    std::string word;
    if (byte_level) {
      for (char c : piece) word += byte_level::byte_to_utf8(static_cast<uint8_t>(c));
    } else {
      word.assign(piece);
    }
    if (std::optional<int32_t> id = vocab_.find(word)) {
      out.push_back({*id, 0, static_cast<uint32_t>(piece.size())});
      cache.insert(piece, 0, out, first);
      return;
    }
  }
  thread_local std::vector<Symbol> symbols;
  initial_symbols(piece, byte_level, symbols);
  merge(symbols, symbols.size() > kSmallWord);
  for (const Symbol& s : symbols) out.push_back({s.id, s.begin, s.end});
  cache.insert(piece, 0, out, first);
}

}  // namespace loom::data
