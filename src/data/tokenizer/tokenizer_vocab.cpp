// TokenVocab: token <-> id table shared by the tokenizer models (data/tokenizer_model.h).
#include "data/tokenizer/tokenizer_model.h"

namespace loom::data {

void TokenVocab::insert(std::string_view token, int32_t id) {
  size_t entry = map_.insert_or_assign(token, id);
  if (static_cast<size_t>(id) >= entry_of_id_.size()) {
    entry_of_id_.resize(static_cast<size_t>(id) + 1, -1);
  }
  entry_of_id_[id] = static_cast<int32_t>(entry);
}

}  // namespace loom::data
