// tokenizer.json -> TokenizerSpec. One parse function per component kind; each checks the
// JSON shape and reports faults as "[file] path.to.field: fault" (see io/tokenizer_json.h).
#include "io/tokenizer_json.h"

#include <string>

#include "io/tokenizer_file_util.h"
#include "io/tokenizer_json_sax.h"
#include "loom/error.h"

namespace loom::io {
namespace {

using nlohmann::json;

std::string index_path(const std::string& where, size_t i) {
  return where + "[" + std::to_string(i) + "]";
}

const json& require_array(const JsonFields& f, const json& obj, const char* key,
                          const std::string& where) {
  const json& v = f.at(obj, key, where);
  if (!v.is_array()) {
    f.fail(where + "." + key, std::string("expected an array, got ") + v.type_name());
  }
  return v;
}

std::string type_of(const JsonFields& f, const json& obj, const std::string& where) {
  return f.as_string(f.at(obj, "type", where), where + ".type");
}

void parse_vocab(const JsonFields& f, const json& model, TokenizerJsonParts& parts,
                 TokenizerModelSpec& spec) {
  const json& vocab = f.at(model, "vocab", "model");
  if (parts.has_vocab) {
    spec.vocab = std::move(parts.vocab);
    return;
  }
  if (!vocab.is_object()) {
    f.fail("model.vocab", std::string("expected an object {token: id}, got ") + vocab.type_name());
  }
  spec.vocab.reserve(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    int64_t id = f.as_int(it.value(), 0, kMaxTokenId, "model.vocab[\"" + it.key() + "\"]");
    spec.vocab.emplace_back(it.key(), static_cast<int32_t>(id));
  }
}

void parse_merges(const JsonFields& f, const json& model, TokenizerJsonParts& parts,
                  TokenizerModelSpec& spec) {
  f.at(model, "merges", "model");
  if (parts.has_merges) {
    spec.merges = std::move(parts.merges);
    return;
  }
  const json& merges = require_array(f, model, "merges", "model");
  spec.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& m = merges[i];
    std::string where = index_path("model.merges", i);
    if (m.is_string()) {
      // "left right": split at the first space (tokenizers' legacy merge format).
      const std::string& s = m.get_ref<const std::string&>();
      size_t space = s.find(' ');
      if (space == std::string::npos) f.fail(where, "merge \"" + s + "\" has no space");
      spec.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2) {
      spec.merges.emplace_back(f.as_string(m[0], where + "[0]"), f.as_string(m[1], where + "[1]"));
    } else {
      f.fail(where, std::string("expected \"left right\" or [left, right], got ") + m.type_name());
    }
  }
}

TokenizerModelSpec parse_model(const JsonFields& f, const json& root, TokenizerJsonParts& parts) {
  const json& model = f.at(root, "model", "");
  f.require_object(model, "model");
  TokenizerModelSpec spec;
  std::optional<std::string> type = f.get_opt_string(model, "type", "model");
  if (!type) {
    // Old files omit the tag; tokenizers then tells the models apart by their fields.
    if (f.find(model, "merges") != nullptr) {
      type = "BPE";
    } else if (f.find(model, "max_input_chars_per_word") != nullptr) {
      type = "WordPiece";
    } else {
      f.fail("model", "missing field 'type'");
    }
  }
  spec.type = *type;
  spec.unk_token = f.get_opt_string(model, "unk_token", "model");
  spec.continuing_subword_prefix = f.get_opt_string(model, "continuing_subword_prefix", "model");
  if (spec.type == "BPE") {
    parse_vocab(f, model, parts, spec);
    parse_merges(f, model, parts, spec);
    spec.end_of_word_suffix = f.get_opt_string(model, "end_of_word_suffix", "model");
    spec.fuse_unk = f.get_bool(model, "fuse_unk", false, "model");
    spec.byte_fallback = f.get_bool(model, "byte_fallback", false, "model");
    spec.ignore_merges = f.get_bool(model, "ignore_merges", false, "model");
    const json* dropout = f.find(model, "dropout");
    if (dropout != nullptr && !dropout->is_null()) {
      if (!dropout->is_number()) f.fail("model.dropout", "expected a number or null");
      if (dropout->get<double>() > 0.0) {
        f.fail("model.dropout", "BPE dropout is random and not supported; set it to null");
      }
    }
  } else if (spec.type == "WordPiece") {
    parse_vocab(f, model, parts, spec);
    spec.max_input_chars_per_word =
        f.get_int(model, "max_input_chars_per_word", 100, 0, INT32_MAX, "model");
    if (!spec.continuing_subword_prefix) spec.continuing_subword_prefix = "##";
    if (!spec.unk_token) spec.unk_token = "[UNK]";
  } else {
    f.fail("model.type", "unsupported model '" + spec.type + "' (loom supports BPE, WordPiece)");
  }
  return spec;
}

NormalizerSpec parse_normalizer(const JsonFields& f, const json& v, const std::string& where,
                                int depth) {
  f.require_object(v, where);
  if (depth > 16) f.fail(where, "Sequence nested too deeply");
  NormalizerSpec spec;
  spec.type = type_of(f, v, where);
  if (spec.type == "BertNormalizer") {
    spec.clean_text = f.get_bool(v, "clean_text", true, where);
    spec.handle_chinese_chars = f.get_bool(v, "handle_chinese_chars", true, where);
    spec.strip_accents = f.get_opt_bool(v, "strip_accents", where);
    spec.lowercase = f.get_bool(v, "lowercase", true, where);
  } else if (spec.type == "Sequence") {
    const json& list = require_array(f, v, "normalizers", where);
    for (size_t i = 0; i < list.size(); ++i) {
      spec.children.push_back(
          parse_normalizer(f, list[i], index_path(where + ".normalizers", i), depth + 1));
    }
  } else if (spec.type != "Lowercase" && spec.type != "NFC" && spec.type != "NFD" &&
             spec.type != "NFKC" && spec.type != "NFKD" && spec.type != "StripAccents") {
    f.fail(where + ".type", "unsupported normalizer '" + spec.type +
                                "' (loom supports BertNormalizer, Lowercase, NFC, NFD, NFKC, "
                                "NFKD, StripAccents, Sequence)");
  }
  return spec;
}

// Split (tokenizers/src/pre_tokenizers/split.rs): "pattern" is {"Regex": s} or {"String": s}.
void parse_split(const JsonFields& f, const json& v, const std::string& where,
                 PreTokenizerSpec& spec) {
  const json* pattern = f.find(v, "pattern");
  if (pattern == nullptr) f.fail(where + ".pattern", "missing");
  f.require_object(*pattern, where + ".pattern");
  const json* regex = f.find(*pattern, "Regex");
  const json* literal = f.find(*pattern, "String");
  const json* text = regex != nullptr ? regex : literal;
  if (text == nullptr || !text->is_string()) {
    f.fail(where + ".pattern", "expected {\"Regex\": string} or {\"String\": string}");
  }
  spec.pattern = text->get<std::string>();
  spec.pattern_is_regex = regex != nullptr;
  spec.behavior = f.get_string(v, "behavior", "Isolated", where);
  spec.invert = f.get_bool(v, "invert", false, where);
  static const char* const kBehaviors[] = {"Removed", "Isolated", "MergedWithPrevious",
                                           "MergedWithNext", "Contiguous"};
  bool known = false;
  for (const char* b : kBehaviors) known = known || spec.behavior == b;
  if (!known) {
    f.fail(where + ".behavior", "unknown behavior '" + spec.behavior +
                                    "' (Removed, Isolated, MergedWithPrevious, MergedWithNext, "
                                    "Contiguous)");
  }
}

PreTokenizerSpec parse_pre_tokenizer(const JsonFields& f, const json& v, const std::string& where,
                                     int depth) {
  f.require_object(v, where);
  if (depth > 16) f.fail(where, "Sequence nested too deeply");
  PreTokenizerSpec spec;
  spec.type = type_of(f, v, where);
  if (spec.type == "ByteLevel") {
    spec.add_prefix_space = f.get_bool(v, "add_prefix_space", true, where);
    spec.trim_offsets = f.get_bool(v, "trim_offsets", true, where);
    spec.use_regex = f.get_bool(v, "use_regex", true, where);
  } else if (spec.type == "Sequence") {
    const json& list = require_array(f, v, "pretokenizers", where);
    for (size_t i = 0; i < list.size(); ++i) {
      spec.children.push_back(
          parse_pre_tokenizer(f, list[i], index_path(where + ".pretokenizers", i), depth + 1));
    }
  } else if (spec.type == "Split") {
    parse_split(f, v, where, spec);
  } else if (spec.type != "BertPreTokenizer" && spec.type != "WhitespaceSplit") {
    f.fail(where + ".type", "unsupported pre_tokenizer '" + spec.type +
                                "' (loom supports ByteLevel, BertPreTokenizer, "
                                "WhitespaceSplit, Split, Sequence)");
  }
  return spec;
}

std::vector<TemplatePieceSpec> parse_template(const JsonFields& f, const json& v, const char* key,
                                              const std::string& where) {
  const json& list = require_array(f, v, key, where);
  std::vector<TemplatePieceSpec> pieces;
  for (size_t i = 0; i < list.size(); ++i) {
    std::string at = index_path(where + "." + key, i);
    f.require_object(list[i], at);
    TemplatePieceSpec piece;
    const json* body = f.find(list[i], "Sequence");
    piece.is_sequence = body != nullptr;
    if (body == nullptr) body = f.find(list[i], "SpecialToken");
    if (body == nullptr) f.fail(at, "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    f.require_object(*body, at);
    piece.id = f.as_string(f.at(*body, "id", at), at + ".id");
    piece.type_id = static_cast<int32_t>(f.get_int(*body, "type_id", 0, 0, 1 << 20, at));
    if (piece.is_sequence && piece.id != "A" && piece.id != "B") {
      f.fail(at + ".id", "sequence id must be \"A\" or \"B\", got \"" + piece.id + "\"");
    }
    pieces.push_back(std::move(piece));
  }
  return pieces;
}

std::pair<std::string, int32_t> parse_token_id_pair(const JsonFields& f, const json& v,
                                                    const char* key, const std::string& where) {
  const json& p = f.at(v, key, where);
  std::string at = where + "." + key;
  if (!p.is_array() || p.size() != 2) f.fail(at, "expected [token, id]");
  return {f.as_string(p[0], at + "[0]"),
          static_cast<int32_t>(f.as_int(p[1], 0, kMaxTokenId, at + "[1]"))};
}

void parse_template_specials(const JsonFields& f, const json& v, const std::string& where,
                             PostProcessorSpec& spec) {
  const json* specials = f.find(v, "special_tokens");
  if (specials == nullptr || specials->is_null()) return;
  std::string at = where + ".special_tokens";
  f.require_object(*specials, at);
  for (auto it = specials->begin(); it != specials->end(); ++it) {
    std::string item = at + "[\"" + it.key() + "\"]";
    const json& ids = f.at(it.value(), "ids", item);
    if (!ids.is_array()) f.fail(item + ".ids", "expected an array of ids");
    std::vector<int32_t> out;
    for (size_t i = 0; i < ids.size(); ++i) {
      out.push_back(
          static_cast<int32_t>(f.as_int(ids[i], 0, kMaxTokenId, index_path(item + ".ids", i))));
    }
    spec.special_tokens[it.key()] = std::move(out);
  }
}

PostProcessorSpec parse_post_processor(const JsonFields& f, const json& v, const std::string& where,
                                       int depth) {
  f.require_object(v, where);
  if (depth > 16) f.fail(where, "Sequence nested too deeply");
  PostProcessorSpec spec;
  spec.type = type_of(f, v, where);
  if (spec.type == "TemplateProcessing") {
    spec.single = parse_template(f, v, "single", where);
    spec.pair = parse_template(f, v, "pair", where);
    parse_template_specials(f, v, where, spec);
  } else if (spec.type == "BertProcessing" || spec.type == "RobertaProcessing") {
    spec.sep = parse_token_id_pair(f, v, "sep", where);
    spec.cls = parse_token_id_pair(f, v, "cls", where);
    spec.trim_offsets = f.get_bool(v, "trim_offsets", true, where);
    spec.add_prefix_space = f.get_bool(v, "add_prefix_space", true, where);
  } else if (spec.type == "ByteLevel") {
    spec.trim_offsets = f.get_bool(v, "trim_offsets", true, where);
    spec.add_prefix_space = f.get_bool(v, "add_prefix_space", true, where);
  } else if (spec.type == "Sequence") {
    const json& list = require_array(f, v, "processors", where);
    for (size_t i = 0; i < list.size(); ++i) {
      spec.children.push_back(
          parse_post_processor(f, list[i], index_path(where + ".processors", i), depth + 1));
    }
  } else {
    f.fail(where + ".type", "unsupported post_processor '" + spec.type +
                                "' (loom supports TemplateProcessing, BertProcessing, "
                                "RobertaProcessing, ByteLevel, Sequence)");
  }
  return spec;
}

DecoderSpec parse_decoder(const JsonFields& f, const json& v, const std::string& where, int depth) {
  f.require_object(v, where);
  if (depth > 16) f.fail(where, "Sequence nested too deeply");
  DecoderSpec spec;
  spec.type = type_of(f, v, where);
  if (spec.type == "WordPiece") {
    spec.prefix = f.get_string(v, "prefix", "##", where);
    spec.cleanup = f.get_bool(v, "cleanup", true, where);
  } else if (spec.type == "Sequence") {
    const json& list = require_array(f, v, "decoders", where);
    for (size_t i = 0; i < list.size(); ++i) {
      spec.children.push_back(
          parse_decoder(f, list[i], index_path(where + ".decoders", i), depth + 1));
    }
  } else if (spec.type != "ByteLevel") {
    f.fail(where + ".type", "unsupported decoder '" + spec.type +
                                "' (loom supports ByteLevel, WordPiece, Sequence)");
  }
  return spec;
}

std::vector<AddedTokenSpec> parse_added_tokens(const JsonFields& f, const json& root) {
  std::vector<AddedTokenSpec> out;
  const json* list = f.find(root, "added_tokens");
  if (list == nullptr || list->is_null()) return out;
  if (!list->is_array()) f.fail("added_tokens", "expected an array");
  for (size_t i = 0; i < list->size(); ++i) {
    const json& t = (*list)[i];
    std::string at = index_path("added_tokens", i);
    AddedTokenSpec spec;
    spec.id = static_cast<int32_t>(f.as_int(f.at(t, "id", at), 0, kMaxTokenId, at + ".id"));
    spec.content = f.as_string(f.at(t, "content", at), at + ".content");
    if (spec.content.empty()) f.fail(at + ".content", "empty token");
    spec.single_word = f.get_bool(t, "single_word", false, at);
    spec.lstrip = f.get_bool(t, "lstrip", false, at);
    spec.rstrip = f.get_bool(t, "rstrip", false, at);
    spec.normalized = f.get_bool(t, "normalized", true, at);
    spec.special = f.get_bool(t, "special", false, at);
    out.push_back(std::move(spec));
  }
  return out;
}

std::optional<TruncationSpec> parse_truncation(const JsonFields& f, const json& root) {
  const json* v = f.find(root, "truncation");
  if (v == nullptr || v->is_null()) return std::nullopt;
  f.require_object(*v, "truncation");
  TruncationSpec spec;
  spec.max_length = f.get_int(*v, "max_length", 512, 0, INT32_MAX, "truncation");
  spec.stride = f.get_int(*v, "stride", 0, 0, INT32_MAX, "truncation");
  spec.strategy = f.get_string(*v, "strategy", "LongestFirst", "truncation");
  spec.direction = f.get_string(*v, "direction", "Right", "truncation");
  if (spec.strategy != "LongestFirst" && spec.strategy != "OnlyFirst" &&
      spec.strategy != "OnlySecond") {
    f.fail("truncation.strategy", "unknown strategy '" + spec.strategy + "'");
  }
  if (spec.direction != "Right" && spec.direction != "Left") {
    f.fail("truncation.direction", "unknown direction '" + spec.direction + "'");
  }
  return spec;
}

std::optional<PaddingSpec> parse_padding(const JsonFields& f, const json& root) {
  const json* v = f.find(root, "padding");
  if (v == nullptr || v->is_null()) return std::nullopt;
  f.require_object(*v, "padding");
  PaddingSpec spec;
  const json* strategy = f.find(*v, "strategy");
  if (strategy != nullptr && strategy->is_object()) {
    spec.fixed_length = f.as_int(f.at(*strategy, "Fixed", "padding.strategy"), 0, INT32_MAX,
                                 "padding.strategy.Fixed");
  } else if (strategy != nullptr && !(strategy->is_string() && *strategy == "BatchLongest")) {
    f.fail("padding.strategy", "expected \"BatchLongest\" or {\"Fixed\": n}");
  }
  spec.direction = f.get_string(*v, "direction", "Right", "padding");
  if (spec.direction != "Right" && spec.direction != "Left") {
    f.fail("padding.direction", "unknown direction '" + spec.direction + "'");
  }
  const json* multiple = f.find(*v, "pad_to_multiple_of");
  if (multiple != nullptr && !multiple->is_null()) {
    spec.pad_to_multiple_of = f.as_int(*multiple, 0, INT32_MAX, "padding.pad_to_multiple_of");
  }
  spec.pad_id = f.get_int(*v, "pad_id", 0, 0, kMaxTokenId, "padding");
  spec.pad_type_id = f.get_int(*v, "pad_type_id", 0, 0, 1 << 20, "padding");
  spec.pad_token = f.get_string(*v, "pad_token", "[PAD]", "padding");
  return spec;
}

}  // namespace

TokenizerSpec parse_tokenizer_json(std::string_view text, const std::string& source) {
  TokenizerJsonParts parts = parse_tokenizer_json_parts(text, source, kMaxTokenId);
  const json& root = parts.root;
  JsonFields f(source);
  f.require_object(root, "");
  TokenizerSpec spec;
  spec.source = source;
  spec.model = parse_model(f, root, parts);
  if (const json* v = f.find(root, "normalizer"); v != nullptr && !v->is_null()) {
    spec.normalizer = parse_normalizer(f, *v, "normalizer", 0);
  }
  if (const json* v = f.find(root, "pre_tokenizer"); v != nullptr && !v->is_null()) {
    spec.pre_tokenizer = parse_pre_tokenizer(f, *v, "pre_tokenizer", 0);
  }
  if (const json* v = f.find(root, "post_processor"); v != nullptr && !v->is_null()) {
    spec.post_processor = parse_post_processor(f, *v, "post_processor", 0);
  }
  if (const json* v = f.find(root, "decoder"); v != nullptr && !v->is_null()) {
    spec.decoder = parse_decoder(f, *v, "decoder", 0);
  }
  spec.added_tokens = parse_added_tokens(f, root);
  spec.truncation = parse_truncation(f, root);
  spec.padding = parse_padding(f, root);
  return spec;
}

TokenizerSpec read_tokenizer_json(const std::string& path) {
  return parse_tokenizer_json(read_tokenizer_file(path), path);
}

}  // namespace loom::io
