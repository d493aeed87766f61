// loom::Tokenizer: loading (tokenizer.json, GPT-2 and BERT files, folders), encoding single
// texts, pairs and batches (on worker threads), decoding and vocabulary queries. The
// pipeline itself lives in TokenizerImpl (data/tokenizer_impl.h).
#include "loom/tokenizer.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>

#include "data/tokenizer/tokenizer_impl.h"
#include "io/tokenizer_files.h"
#include "io/tokenizer_json.h"
#include "loom/error.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

void overlay_roles(io::SpecialTokenRoles& dst, const io::SpecialTokenRoles& src) {
  for (auto [d, s] : {std::pair{&dst.unk, &src.unk},
                      {&dst.bos, &src.bos},
                      {&dst.eos, &src.eos},
                      {&dst.pad, &src.pad},
                      {&dst.cls, &src.cls},
                      {&dst.sep, &src.sep},
                      {&dst.mask, &src.mask}}) {
    if (*s) *d = *s;
  }
}

io::TokenizerSpec spec_from_dir(const std::string& dir) {
  std::error_code ec;
  LOOM_CHECK(fs::is_directory(dir, ec), "[", dir, "] is not a directory");
  const fs::path root(dir);
  std::optional<io::TokenizerConfig> config;
  if (is_file(root / "tokenizer_config.json")) {
    config = io::read_tokenizer_config((root / "tokenizer_config.json").string());
  }
  io::TokenizerSpec spec;
  if (is_file(root / "tokenizer.json")) {
    spec = io::read_tokenizer_json((root / "tokenizer.json").string());
  } else if (is_file(root / "vocab.json") && is_file(root / "merges.txt")) {
    bool prefix = config && config->add_prefix_space.value_or(false);
    spec =
        io::read_gpt2_files((root / "vocab.json").string(), (root / "merges.txt").string(), prefix);
  } else if (is_file(root / "vocab.txt")) {
    io::BertVocabOptions options;
    if (config) {
      options.lowercase = config->do_lower_case.value_or(true);
      options.tokenize_chinese_chars = config->tokenize_chinese_chars.value_or(true);
      options.strip_accents = config->strip_accents;
      const io::SpecialTokenRoles& r = config->roles;
      if (r.unk) options.unk = *r.unk;
      if (r.sep) options.sep = *r.sep;
      if (r.pad) options.pad = *r.pad;
      if (r.cls) options.cls = *r.cls;
      if (r.mask) options.mask = *r.mask;
    }
    spec = io::read_bert_vocab((root / "vocab.txt").string(), options);
  } else {
    fail("[", dir, "] has no tokenizer.json, vocab.json + merges.txt, or vocab.txt");
  }
  if (config) overlay_roles(spec.roles, config->roles);
  return spec;
}

// Runs encode_one(i) for i in [0, n) on up to num_threads threads; rethrows the first error.
template <typename Fn>
std::vector<Encoding> run_batch(size_t n, int num_threads, Fn encode_one) {
  std::vector<Encoding> out(n);
  size_t threads = num_threads > 0 ? static_cast<size_t>(num_threads)
                                   : std::max(1u, std::thread::hardware_concurrency());
  threads = std::min(threads, (n + 15) / 16);
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) out[i] = encode_one(i);
    return out;
  }
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mu;
  auto worker = [&] {
    try {
      for (size_t start; (start = next.fetch_add(16)) < n;) {
        for (size_t i = start; i < std::min(n, start + 16); ++i) out[i] = encode_one(i);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mu);
      if (!error) error = std::current_exception();
      next.store(n);
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  return out;
}

}  // namespace

Tokenizer::Tokenizer(std::shared_ptr<const detail::TokenizerImpl> impl)
    : impl_(std::move(impl)), defaults_(impl_->defaults) {}

Tokenizer Tokenizer::from_file(const std::string& path) {
  return Tokenizer(detail::build_tokenizer(io::read_tokenizer_json(path)));
}

Tokenizer Tokenizer::from_pretrained(const std::string& dir) {
  return Tokenizer(detail::build_tokenizer(spec_from_dir(dir)));
}

Tokenizer Tokenizer::from_gpt2_files(const std::string& vocab_json, const std::string& merges_txt,
                                     bool add_prefix_space) {
  return Tokenizer(
      detail::build_tokenizer(io::read_gpt2_files(vocab_json, merges_txt, add_prefix_space)));
}

Tokenizer Tokenizer::from_bert_vocab(const std::string& vocab_txt, bool lowercase) {
  io::BertVocabOptions options;
  options.lowercase = lowercase;
  return Tokenizer(detail::build_tokenizer(io::read_bert_vocab(vocab_txt, options)));
}

Encoding Tokenizer::encode(std::string_view text) const { return encode(text, defaults_); }

Encoding Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  return impl_->encode(text, nullptr, options, true);
}

Encoding Tokenizer::encode_pair(std::string_view first, std::string_view second,
                                const EncodeOptions& options) const {
  return impl_->encode(first, &second, options, true);
}

Encoding Tokenizer::encode_pair(std::string_view first, std::string_view second) const {
  return encode_pair(first, second, defaults_);
}

std::vector<Encoding> Tokenizer::encode_batch(std::span<const std::string> texts,
                                              const EncodeOptions& options, int num_threads) const {
  std::vector<Encoding> out = run_batch(texts.size(), num_threads, [&](size_t i) {
    return impl_->encode(texts[i], nullptr, options, false);
  });
  if (options.padding) impl_->pad_batch(out, *options.padding, options.return_offsets);
  return out;
}

std::vector<Encoding> Tokenizer::encode_batch(std::span<const std::string> texts) const {
  return encode_batch(texts, defaults_);
}

std::vector<Encoding> Tokenizer::encode_pair_batch(std::span<const std::string> firsts,
                                                   std::span<const std::string> seconds,
                                                   const EncodeOptions& options,
                                                   int num_threads) const {
  LOOM_CHECK(firsts.size() == seconds.size(), "[tokenizer] encode_pair_batch: ", firsts.size(),
             " first texts but ", seconds.size(), " second texts");
  std::vector<Encoding> out = run_batch(firsts.size(), num_threads, [&](size_t i) {
    std::string_view second = seconds[i];
    return impl_->encode(firsts[i], &second, options, false);
  });
  if (options.padding) impl_->pad_batch(out, *options.padding, options.return_offsets);
  return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  return impl_->decode(ids.data(), ids.size(), skip_special_tokens);
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  return impl_->token_to_id(token);
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  std::optional<std::string_view> t = impl_->id_to_token(id);
  if (!t) return std::nullopt;
  return std::string(*t);
}

std::vector<std::string> Tokenizer::convert_ids_to_tokens(std::span<const int32_t> ids) const {
  std::vector<std::string> out;
  out.reserve(ids.size());
  for (int32_t id : ids) {
    std::optional<std::string_view> t = impl_->id_to_token(id);
    LOOM_CHECK(t.has_value(), "[", impl_->source, "] id ", id, " is not in the vocabulary");
    out.emplace_back(*t);
  }
  return out;
}

int64_t Tokenizer::vocab_size() const { return impl_->vocab_size; }
std::optional<int32_t> Tokenizer::pad_token_id() const { return impl_->pad; }
std::optional<int32_t> Tokenizer::unk_token_id() const { return impl_->unk; }
std::optional<int32_t> Tokenizer::cls_token_id() const { return impl_->cls; }
std::optional<int32_t> Tokenizer::sep_token_id() const { return impl_->sep; }
std::optional<int32_t> Tokenizer::mask_token_id() const { return impl_->mask; }
std::optional<int32_t> Tokenizer::bos_token_id() const { return impl_->bos; }
std::optional<int32_t> Tokenizer::eos_token_id() const { return impl_->eos; }
bool Tokenizer::is_special_id(int32_t id) const { return impl_->added.is_special(id); }

int64_t Tokenizer::num_special_tokens_to_add(bool pair) const {
  return impl_->post_processor ? impl_->post_processor->added_tokens(pair) : 0;
}

}  // namespace loom
