// Builds a TokenizerImpl from a TokenizerSpec: instantiates the components, checks that the
// ids the spec refers to exist, resolves special-token roles and the per-id whitespace
// counts used for offset trimming. See data/tokenizer_impl.h.
#include <algorithm>

#include "data/tokenizer/bpe.h"
#include "data/tokenizer/tokenizer_impl.h"
#include "data/tokenizer/tokenizer_unicode.h"
#include "data/tokenizer/wordpiece.h"
#include "loom/error.h"

namespace loom::detail {
namespace {

std::unique_ptr<data::TokenizerModel> build_model(const io::TokenizerSpec& spec) {
  if (spec.model.type == "BPE") return data::BpeModel::build(spec.model, spec.source);
  if (spec.model.type == "WordPiece") return data::WordPieceModel::build(spec.model, spec.source);
  fail("[", spec.source, "] model: unsupported type '", spec.model.type, "'");
}

bool has_byte_level(const io::PreTokenizerSpec& spec) {
  if (spec.type == "ByteLevel") return true;
  return std::any_of(spec.children.begin(), spec.children.end(), has_byte_level);
}

void check_post_processor_ids(const io::PostProcessorSpec& spec, const TokenizerImpl& impl) {
  auto check = [&](int32_t id, const std::string& name) {
    LOOM_CHECK(impl.id_to_token(id).has_value(), "[", impl.source, "] post_processor: token \"",
               name, "\" has id ", id, ", which is not in the vocabulary");
  };
  for (const auto& [name, ids] : spec.special_tokens) {
    for (int32_t id : ids) check(id, name);
  }
  if (spec.type == "BertProcessing" || spec.type == "RobertaProcessing") {
    check(spec.cls.second, spec.cls.first);
    check(spec.sep.second, spec.sep.first);
  }
  for (const io::PostProcessorSpec& child : spec.children) check_post_processor_ids(child, impl);
}

std::optional<int32_t> role_id(const TokenizerImpl& impl, const std::optional<std::string>& tok) {
  if (!tok) return std::nullopt;
  return impl.token_to_id(*tok);
}

// Roles from the spec, else guessed from the special added tokens' usual spellings.
void resolve_roles(const io::TokenizerSpec& spec, TokenizerImpl& impl) {
  const io::SpecialTokenRoles& r = spec.roles;
  impl.unk = role_id(impl, r.unk ? r.unk : spec.model.unk_token);
  impl.bos = role_id(impl, r.bos);
  impl.eos = role_id(impl, r.eos);
  impl.pad = role_id(impl, r.pad);
  impl.cls = role_id(impl, r.cls);
  impl.sep = role_id(impl, r.sep);
  impl.mask = role_id(impl, r.mask);
  auto guess = [](std::optional<int32_t>& slot, int32_t id) {
    if (!slot) slot = id;
  };
  for (const io::AddedTokenSpec& t : impl.added.tokens()) {
    if (!t.special) continue;
    const std::string& c = t.content;
    if (c == "[PAD]" || c == "<pad>") guess(impl.pad, t.id);
    if (c == "[CLS]" || c == "<s>") guess(impl.cls, t.id);
    if (c == "[SEP]" || c == "</s>") guess(impl.sep, t.id);
    if (c == "[MASK]" || c == "<mask>") guess(impl.mask, t.id);
    if (c == "[UNK]" || c == "<unk>") guess(impl.unk, t.id);
    if (c == "<s>" || c == "<|endoftext|>") guess(impl.bos, t.id);
    if (c == "</s>" || c == "<|endoftext|>") guess(impl.eos, t.id);
    if (c == "<|endoftext|>") guess(impl.unk, t.id);
  }
  if (!impl.pad && spec.padding) guess(impl.pad, static_cast<int32_t>(spec.padding->pad_id));
}

}  // namespace

EncodeOptions options_from_spec(const io::TokenizerSpec& spec) {
  EncodeOptions options;
  if (spec.truncation) {
    TruncationOptions t;
    t.max_length = spec.truncation->max_length;
    t.strategy = spec.truncation->strategy == "OnlyFirst"    ? TruncationStrategy::kOnlyFirst
                 : spec.truncation->strategy == "OnlySecond" ? TruncationStrategy::kOnlySecond
                                                             : TruncationStrategy::kLongestFirst;
    t.direction = spec.truncation->direction == "Left" ? Side::kLeft : Side::kRight;
    options.truncation = t;
  }
  if (spec.padding) {
    PaddingOptions p;
    const io::PaddingSpec& s = *spec.padding;
    p.strategy =
        s.fixed_length ? PaddingOptions::Strategy::kFixed : PaddingOptions::Strategy::kLongest;
    p.length = s.fixed_length.value_or(0);
    p.pad_to_multiple_of = s.pad_to_multiple_of.value_or(0);
    p.direction = s.direction == "Left" ? Side::kLeft : Side::kRight;
    p.pad_id = static_cast<int32_t>(s.pad_id);
    p.pad_type_id = static_cast<int32_t>(s.pad_type_id);
    options.padding = p;
  }
  return options;
}

std::shared_ptr<TokenizerImpl> build_tokenizer(const io::TokenizerSpec& spec) {
  auto impl = std::make_shared<TokenizerImpl>();
  impl->source = spec.source;
  impl->model = build_model(spec);
  if (spec.normalizer) impl->normalizer = data::make_normalizer(*spec.normalizer, spec.source);
  if (spec.pre_tokenizer) {
    impl->pre_tokenizer = data::make_pre_tokenizer(*spec.pre_tokenizer, spec.source);
    LOOM_CHECK(!(spec.model.type == "WordPiece" && has_byte_level(*spec.pre_tokenizer)), "[",
               spec.source, "] a WordPiece model after a ByteLevel pre-tokenizer is not supported");
  }
  // As tokenizers does on loading, an added token that is in the model's vocabulary takes
  // the model's id (the id in the file is only a hint).
  std::vector<io::AddedTokenSpec> added = spec.added_tokens;
  for (io::AddedTokenSpec& t : added) {
    if (std::optional<int32_t> id = impl->model->vocab().find(t.content)) t.id = *id;
  }
  impl->added = data::AddedVocab(added, impl->normalizer.get());
  impl->vocab_size = impl->model->vocab().id_bound();
  for (const io::AddedTokenSpec& t : added) {
    impl->vocab_size = std::max<int64_t>(impl->vocab_size, int64_t{t.id} + 1);
  }
  if (spec.post_processor) {
    check_post_processor_ids(*spec.post_processor, *impl);
    impl->post_processor = data::make_post_processor(*spec.post_processor, spec.source);
    if (impl->post_processor->trims_offsets()) {
      impl->spaces.resize(static_cast<size_t>(impl->vocab_size));
      for (int32_t id = 0; id < impl->vocab_size; ++id) {
        std::optional<std::string_view> tok = impl->model->vocab().token(id);
        if (tok) impl->spaces[id] = data::count_token_spaces(*tok);
      }
    }
  }
  if (spec.decoder) impl->decoder = data::make_decoder(*spec.decoder, spec.source);
  resolve_roles(spec, *impl);
  impl->defaults = options_from_spec(spec);
  return impl;
}

}  // namespace loom::detail
