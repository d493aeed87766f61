// TokenizerImpl: the assembled pipeline behind loom::Tokenizer.
//
//   text -> repair invalid UTF-8 -> split out added tokens (raw) -> normalize each segment
//   -> split out added tokens (normalized) -> pre-tokenize -> model -> truncate
//   -> post-process (special tokens, type ids) -> pad
//
// mirroring TokenizerImpl::encode_single_sequence / post_process in
// tokenizers/src/tokenizer/mod.rs. Built once from a TokenizerSpec (tokenizer_build.cpp);
// immutable afterwards, so one instance serves any number of threads.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/tokenizer/normalizer.h"
#include "data/tokenizer/pre_tokenizer.h"
#include "data/tokenizer/tokenizer_added_vocab.h"
#include "data/tokenizer/tokenizer_decoder.h"
#include "data/tokenizer/tokenizer_model.h"
#include "data/tokenizer/tokenizer_post_processor.h"
#include "io/tokenizer_spec.h"
#include "loom/tokenizer.h"

namespace loom::detail {

struct TokenizerImpl {
  std::string source;
  std::unique_ptr<data::NormalizerChain> normalizer;  // may be null
  std::unique_ptr<data::PreTokenizer> pre_tokenizer;  // may be null
  std::unique_ptr<data::TokenizerModel> model;
  std::unique_ptr<data::PostProcessor> post_processor;  // may be null
  std::unique_ptr<data::Decoder> decoder;               // may be null
  data::AddedVocab added;
  std::vector<data::TokenSpaces> spaces;  // per model id; filled when the post-processor trims
  std::optional<int32_t> pad, unk, cls, sep, mask, bos, eos;
  int64_t vocab_size = 0;
  EncodeOptions defaults;  // truncation/padding from the file

  /// Tokenizes one sequence without post-processing: ids, type_ids = type_id, masks, and
  /// byte offsets into `text` (plus per-token whitespace for trimming) when `offsets`.
  void encode_sequence(std::string_view text, int32_t type_id, bool offsets,
                       data::SequenceEncoding& out) const;
  /// encode_sequence for one text or a pair, then truncation, post-processing and (single
  /// encoding) padding, as options say. `pad` false leaves padding to the batch caller.
  Encoding encode(std::string_view first, const std::string_view* second,
                  const EncodeOptions& options, bool pad) const;
  /// Pads all encodings as `padding` says (kLongest: to the longest of them); `offsets`:
  /// the encodings carry offsets, which padding extends with {0, 0}.
  void pad_batch(std::vector<Encoding>& batch, const PaddingOptions& padding, bool offsets) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  /// Token string of `id` (added tokens first), or nullopt.
  std::optional<std::string_view> id_to_token(int32_t id) const;
  std::string decode(const int32_t* ids, size_t n, bool skip_special_tokens) const;
};

/// Builds the pipeline. Throws loom::Error naming spec.source for inconsistent specs.
std::shared_ptr<TokenizerImpl> build_tokenizer(const io::TokenizerSpec& spec);

/// The options stored in a spec (truncation/padding), as EncodeOptions.
EncodeOptions options_from_spec(const io::TokenizerSpec& spec);

}  // namespace loom::detail
