// The older tokenizer files (GPT-2 vocab.json + merges.txt, BERT vocab.txt,
// tokenizer_config.json) -> TokenizerSpec, mirroring transformers' GPT2Converter and
// BertConverter (transformers/convert_slow_tokenizer.py). See io/tokenizer_files.h.
#include "io/tokenizer_files.h"

#include <string_view>

#include "io/tokenizer_file_util.h"
#include "io/tokenizer_json.h"
#include "io/tokenizer_json_sax.h"
#include "loom/error.h"

namespace loom::io {
namespace {

using nlohmann::json;

// Splits text into lines at '\n', dropping one trailing '\r' per line and the empty piece
// after a final newline.
template <typename Fn>
void for_each_line(std::string_view text, Fn&& fn) {
  size_t start = 0;
  size_t line_no = 1;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    fn(line, line_no);
    start = end + 1;
    ++line_no;
  }
}

AddedTokenSpec special_added(const std::string& content, int32_t id) {
  AddedTokenSpec t;
  t.id = id;
  t.content = content;
  t.normalized = false;
  t.special = true;
  return t;
}

std::optional<int32_t> find_id(const std::vector<std::pair<std::string, int32_t>>& vocab,
                               const std::string& token) {
  for (const auto& [t, id] : vocab) {
    if (t == token) return id;
  }
  return std::nullopt;
}

// A special token in tokenizer_config.json: "tok" or {"content": "tok", ...}.
std::optional<std::string> config_token(const JsonFields& f, const json& root, const char* key) {
  const json* v = f.find(root, key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (v->is_object()) return f.as_string(f.at(*v, "content", key), std::string(key) + ".content");
  return f.as_string(*v, key);
}

}  // namespace

std::vector<std::pair<std::string, int32_t>> parse_vocab_json(const std::string& text,
                                                              const std::string& source) {
  std::vector<std::pair<std::string, int32_t>> vocab =
      parse_vocab_object(text, source, kMaxTokenId);
  LOOM_CHECK(!vocab.empty(), "[", source, "] empty vocabulary");
  return vocab;
}

std::vector<std::pair<std::string, std::string>> parse_merges_txt(const std::string& text,
                                                                  const std::string& source) {
  std::vector<std::pair<std::string, std::string>> merges;
  for_each_line(text, [&](std::string_view line, size_t line_no) {
    if (line.empty() || line.starts_with("#version")) return;
    size_t space = line.find(' ');
    if (space == std::string_view::npos || line.find(' ', space + 1) != std::string_view::npos ||
        space == 0 || space + 1 == line.size()) {
      fail("[", source, "] line ", line_no,
           ": expected \"left right\" (two tokens, one space), got \"",
           std::string(line.substr(0, 80)), "\"");
    }
    merges.emplace_back(std::string(line.substr(0, space)), std::string(line.substr(space + 1)));
  });
  return merges;
}

std::vector<std::pair<std::string, int32_t>> parse_vocab_txt(const std::string& text,
                                                             const std::string& source) {
  std::vector<std::pair<std::string, int32_t>> vocab;
  for_each_line(text, [&](std::string_view line, size_t line_no) {
    LOOM_CHECK(static_cast<int64_t>(line_no) <= kMaxTokenId, "[", source, "] more than ",
               kMaxTokenId, " lines");
    vocab.emplace_back(std::string(line), static_cast<int32_t>(line_no - 1));
  });
  LOOM_CHECK(!vocab.empty(), "[", source, "] empty vocabulary");
  return vocab;
}

TokenizerSpec read_gpt2_files(const std::string& vocab_json, const std::string& merges_txt,
                              bool add_prefix_space) {
  return gpt2_spec(parse_vocab_json(read_tokenizer_file(vocab_json), vocab_json),
                   parse_merges_txt(read_tokenizer_file(merges_txt), merges_txt), add_prefix_space,
                   vocab_json + " + " + merges_txt);
}

TokenizerSpec gpt2_spec(std::vector<std::pair<std::string, int32_t>> vocab,
                        std::vector<std::pair<std::string, std::string>> merges,
                        bool add_prefix_space, const std::string& source) {
  TokenizerSpec spec;
  spec.source = source;
  spec.model.type = "BPE";
  spec.model.vocab = std::move(vocab);
  spec.model.merges = std::move(merges);
  spec.model.continuing_subword_prefix = "";
  spec.model.end_of_word_suffix = "";
  PreTokenizerSpec pre;
  pre.type = "ByteLevel";
  pre.add_prefix_space = add_prefix_space;
  spec.pre_tokenizer = pre;
  PostProcessorSpec post;
  post.type = "ByteLevel";
  post.trim_offsets = false;
  post.add_prefix_space = add_prefix_space;
  spec.post_processor = post;
  spec.decoder = DecoderSpec();
  spec.decoder->type = "ByteLevel";
  const std::string eot = "<|endoftext|>";
  if (std::optional<int32_t> id = find_id(spec.model.vocab, eot)) {
    spec.added_tokens.push_back(special_added(eot, *id));
    spec.roles.unk = spec.roles.bos = spec.roles.eos = eot;
  }
  return spec;
}

TokenizerSpec read_bert_vocab(const std::string& vocab_txt, const BertVocabOptions& options) {
  return bert_spec(parse_vocab_txt(read_tokenizer_file(vocab_txt), vocab_txt), options, vocab_txt);
}

TokenizerSpec bert_spec(std::vector<std::pair<std::string, int32_t>> vocab,
                        const BertVocabOptions& options, const std::string& source) {
  const std::string& vocab_txt = source;
  TokenizerSpec spec;
  spec.source = source;
  spec.model.type = "WordPiece";
  spec.model.vocab = std::move(vocab);
  spec.model.unk_token = options.unk;
  spec.model.continuing_subword_prefix = "##";
  NormalizerSpec norm;
  norm.type = "BertNormalizer";
  norm.handle_chinese_chars = options.tokenize_chinese_chars;
  norm.strip_accents = options.strip_accents;
  norm.lowercase = options.lowercase;
  spec.normalizer = norm;
  spec.pre_tokenizer = PreTokenizerSpec();
  spec.pre_tokenizer->type = "BertPreTokenizer";
  spec.decoder = DecoderSpec();
  spec.decoder->type = "WordPiece";
  std::optional<int32_t> cls = find_id(spec.model.vocab, options.cls);
  std::optional<int32_t> sep = find_id(spec.model.vocab, options.sep);
  LOOM_CHECK(find_id(spec.model.vocab, options.unk).has_value(), "[", vocab_txt, "] unk token '",
             options.unk, "' is not in the vocabulary");
  LOOM_CHECK(cls && sep, "[", vocab_txt, "] cls token '", options.cls, "' or sep token '",
             options.sep, "' is not in the vocabulary");
  PostProcessorSpec post;
  post.type = "TemplateProcessing";
  post.single = {{false, options.cls, 0}, {true, "A", 0}, {false, options.sep, 0}};
  post.pair = {{false, options.cls, 0},
               {true, "A", 0},
               {false, options.sep, 0},
               {true, "B", 1},
               {false, options.sep, 1}};
  post.special_tokens[options.cls] = {*cls};
  post.special_tokens[options.sep] = {*sep};
  spec.post_processor = post;
  // Added tokens in transformers' order: pad, unk, cls, sep, mask (those in the vocab).
  for (const std::string* tok :
       {&options.pad, &options.unk, &options.cls, &options.sep, &options.mask}) {
    if (std::optional<int32_t> id = find_id(spec.model.vocab, *tok)) {
      spec.added_tokens.push_back(special_added(*tok, *id));
    }
  }
  spec.roles.unk = options.unk;
  spec.roles.cls = options.cls;
  spec.roles.sep = options.sep;
  if (find_id(spec.model.vocab, options.pad)) spec.roles.pad = options.pad;
  if (find_id(spec.model.vocab, options.mask)) spec.roles.mask = options.mask;
  return spec;
}

TokenizerConfig read_tokenizer_config(const std::string& path) {
  json root = parse_tokenizer_json_text(read_tokenizer_file(path), path);
  JsonFields f(path);
  f.require_object(root, "");
  TokenizerConfig config;
  config.roles.unk = config_token(f, root, "unk_token");
  config.roles.bos = config_token(f, root, "bos_token");
  config.roles.eos = config_token(f, root, "eos_token");
  config.roles.pad = config_token(f, root, "pad_token");
  config.roles.cls = config_token(f, root, "cls_token");
  config.roles.sep = config_token(f, root, "sep_token");
  config.roles.mask = config_token(f, root, "mask_token");
  config.do_lower_case = f.get_opt_bool(root, "do_lower_case", "");
  config.tokenize_chinese_chars = f.get_opt_bool(root, "tokenize_chinese_chars", "");
  config.strip_accents = f.get_opt_bool(root, "strip_accents", "");
  config.add_prefix_space = f.get_opt_bool(root, "add_prefix_space", "");
  return config;
}

}  // namespace loom::io
