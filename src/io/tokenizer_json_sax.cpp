// Streaming tokenizer JSON reader (see io/tokenizer_json_sax.h): a nlohmann SAX handler
// that builds a DOM for most of the document but routes model.vocab / model.merges (or a
// root vocab object) into flat vectors.
#include "io/tokenizer_json_sax.h"

#include "loom/error.h"

namespace loom::io {
namespace {

using nlohmann::json;

class StreamingHandler {
 public:
  enum class Target { kTokenizerJson, kVocabRoot };

  StreamingHandler(Target target, const std::string& source, int64_t max_id,
                   TokenizerJsonParts& out)
      : target_(target), source_(source), max_id_(max_id), out_(out) {}

  bool null() { return value(json(nullptr)); }
  bool boolean(bool v) { return value(json(v)); }
  bool number_integer(json::number_integer_t v) {
    if (mode_ == Mode::kVocab) return vocab_id(v < 0 ? -1 : v, std::to_string(v));
    return value(json(v));
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (mode_ == Mode::kVocab) {
      return vocab_id(v > static_cast<uint64_t>(max_id_) ? -1 : static_cast<int64_t>(v),
                      std::to_string(v));
    }
    return value(json(v));
  }
  bool number_float(json::number_float_t v, const std::string& text) {
    if (mode_ == Mode::kVocab) bad_vocab_value("a number with a fraction (" + text + ")");
    return value(json(v));
  }
  bool string(std::string& s) {
    if (mode_ == Mode::kVocab) bad_vocab_value("a string");
    if (mode_ == Mode::kMerges) return merge_string(s);
    if (mode_ == Mode::kMergePair) {
      if (pair_.size() >= 2) bad_merge("a pair with more than two items");
      pair_.push_back(std::move(s));
      return true;
    }
    return value(json(std::move(s)));
  }
  bool binary(json::binary_t&) { ::loom::fail("[", source_, "] invalid JSON: binary value"); }

  bool start_object(std::size_t) {
    if (mode_ == Mode::kVocab) bad_vocab_value("an object");
    if (mode_ == Mode::kMerges || mode_ == Mode::kMergePair) bad_merge("an object");
    if (at_vocab()) {
      mode_ = Mode::kVocab;
      return true;
    }
    if (target_ == Target::kVocabRoot) {
      ::loom::fail("[", source_, "] expected an object {token: id} at the top level");
    }
    return open(json::object());
  }
  bool key(std::string& k) {
    if (mode_ == Mode::kVocab) {
      token_ = std::move(k);
    } else {
      key_ = std::move(k);
    }
    return true;
  }
  bool end_object() {
    if (mode_ == Mode::kVocab) {
      mode_ = Mode::kNone;
      out_.has_vocab = true;
      return target_ == Target::kVocabRoot ? true : value(json(nullptr));
    }
    return close();
  }
  bool start_array(std::size_t) {
    if (mode_ == Mode::kVocab) bad_vocab_value("an array");
    if (mode_ == Mode::kMergePair) bad_merge("a nested array");
    if (mode_ == Mode::kMerges) {
      mode_ = Mode::kMergePair;
      pair_.clear();
      return true;
    }
    if (target_ == Target::kVocabRoot) {
      ::loom::fail("[", source_, "] expected an object {token: id} at the top level");
    }
    if (in_model() && key_ == "merges") {
      mode_ = Mode::kMerges;
      return true;
    }
    return open(json::array());
  }
  bool end_array() {
    if (mode_ == Mode::kMergePair) {
      if (pair_.size() != 2) bad_merge("a pair with " + std::to_string(pair_.size()) + " items");
      out_.merges.emplace_back(std::move(pair_[0]), std::move(pair_[1]));
      mode_ = Mode::kMerges;
      return true;
    }
    if (mode_ == Mode::kMerges) {
      mode_ = Mode::kNone;
      out_.has_merges = true;
      return value(json(nullptr));
    }
    return close();
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    ::loom::fail("[", source_, "] invalid JSON: ", e.what());
  }

 private:
  enum class Mode { kNone, kVocab, kMerges, kMergePair };

  bool in_model() const {
    return stack_.size() == 2 && keys_[1] == "model" && stack_[1]->is_object();
  }
  bool at_vocab() const {
    if (target_ == Target::kVocabRoot) return stack_.empty();
    return in_model() && key_ == "vocab";
  }

  // Adds a scalar or container to the current container (or as the root).
  json* insert(json v) {
    if (stack_.empty()) {
      out_.root = std::move(v);
      return &out_.root;
    }
    json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    json& slot = top[key_];
    slot = std::move(v);
    return &slot;
  }
  bool value(json v) {
    insert(std::move(v));
    return true;
  }
  bool open(json container) {
    std::string k = !stack_.empty() && stack_.back()->is_object() ? key_ : std::string();
    stack_.push_back(insert(std::move(container)));
    keys_.push_back(std::move(k));
    return true;
  }
  bool close() {
    stack_.pop_back();
    keys_.pop_back();
    return true;
  }

  bool vocab_id(int64_t id, const std::string& text) {
    if (id < 0 || id > max_id_) {
      ::loom::fail("[", source_, "] ", vocab_where(), ": id ", text, " outside [0, ", max_id_, "]");
    }
    out_.vocab.emplace_back(std::move(token_), static_cast<int32_t>(id));
    return true;
  }
  std::string vocab_where() const {
    std::string t = token_.size() > 40 ? token_.substr(0, 40) + "..." : token_;
    return (target_ == Target::kVocabRoot ? std::string() : std::string("model.vocab")) + "[\"" +
           t + "\"]";
  }
  [[noreturn]] void bad_vocab_value(const std::string& what) {
    ::loom::fail("[", source_, "] ", vocab_where(), ": expected an integer id, got ", what);
  }
  [[noreturn]] void bad_merge(const std::string& what) {
    ::loom::fail("[", source_, "] model.merges[", out_.merges.size(),
                 "]: expected \"left right\" or [left, right], got ", what);
  }
  bool merge_string(const std::string& s) {
    size_t space = s.find(' ');
    if (space == std::string::npos) {
      ::loom::fail("[", source_, "] model.merges[", out_.merges.size(), "]: merge \"",
                   s.substr(0, 80), "\" has no space");
    }
    out_.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    return true;
  }

  Target target_;
  const std::string& source_;
  int64_t max_id_;
  TokenizerJsonParts& out_;
  Mode mode_ = Mode::kNone;
  std::vector<json*> stack_;
  std::vector<std::string> keys_;  // key under which each open container sits
  std::string key_, token_;
  std::vector<std::string> pair_;
};

}  // namespace

TokenizerJsonParts parse_tokenizer_json_parts(std::string_view text, const std::string& source,
                                              int64_t max_id) {
  TokenizerJsonParts parts;
  StreamingHandler handler(StreamingHandler::Target::kTokenizerJson, source, max_id, parts);
  try {
    json::sax_parse(text.begin(), text.end(), &handler);
  } catch (const json::exception& e) {
    ::loom::fail("[", source, "] invalid JSON: ", e.what());
  }
  return parts;
}

std::vector<std::pair<std::string, int32_t>> parse_vocab_object(std::string_view text,
                                                                const std::string& source,
                                                                int64_t max_id) {
  TokenizerJsonParts parts;
  StreamingHandler handler(StreamingHandler::Target::kVocabRoot, source, max_id, parts);
  try {
    json::sax_parse(text.begin(), text.end(), &handler);
  } catch (const json::exception& e) {
    ::loom::fail("[", source, "] invalid JSON: ", e.what());
  }
  LOOM_CHECK(parts.has_vocab, "[", source, "] expected an object {token: id} at the top level");
  return std::move(parts.vocab);
}

}  // namespace loom::io
