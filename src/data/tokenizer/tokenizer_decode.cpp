// TokenizerImpl's vocabulary lookups and decode (tokenizers/src/tokenizer/mod.rs decode:
// ids -> token strings, special tokens optionally skipped, then the decoder, or the tokens
// joined by spaces when there is no decoder). See data/tokenizer_impl.h.
#include <string>

#include "data/tokenizer/tokenizer_impl.h"
#include "loom/error.h"

namespace loom::detail {

std::optional<int32_t> TokenizerImpl::token_to_id(std::string_view token) const {
  int32_t id = added.find(token);
  if (id >= 0) return id;
  return model->vocab().find(token);
}

std::optional<std::string_view> TokenizerImpl::id_to_token(int32_t id) const {
  if (const std::string* t = added.surface(id)) return std::string_view(*t);
  return model->vocab().token(id);
}

std::string TokenizerImpl::decode(const int32_t* ids, size_t n, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const int32_t id = ids[i];
    LOOM_CHECK(id >= 0 && id < vocab_size, "[", source, "] decode: id ", id, " at position ", i,
               " is outside [0, ", vocab_size, ")");
    std::optional<std::string_view> token = id_to_token(id);
    LOOM_CHECK(token.has_value(), "[", source, "] decode: id ", id, " at position ", i,
               " has no token");
    if (skip_special_tokens && added.is_special(id)) continue;
    tokens.emplace_back(*token);
  }
  if (decoder) decoder->decode_chain(tokens);
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!decoder && i > 0) out += ' ';
    out += tokens[i];
  }
  return out;
}

}  // namespace loom::detail
