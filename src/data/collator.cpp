// Collators of loom/collator.h: padding (DataCollatorWithPadding), causal LM
// and masked LM (transformers' DataCollatorForLanguageModeling, mlm=False and
// mlm=True). Batches are built in host vectors and become cpu tensors at the
// end; a DeviceLoader moves them to the device. PaddingMaskCollator gives the
// sampler's padding examples ignore_index labels (data parallel).
#include "loom/collator.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/philox.h"
#include "loom/error.h"

namespace loom::data {
namespace {

// A padded batch in host memory: every per-token field is [B, T] row-major.
struct Padded {
  int64_t batch = 0, length = 0;
  std::vector<int64_t> input_ids, attention_mask, token_type_ids, labels;
  std::vector<uint8_t> special;  // 1 = special or padding (never masked)
  std::vector<int64_t> class_labels;
  bool has_types = false, has_seq_labels = false, has_class_labels = false;
  bool has_special = false;  // every example carried a special_tokens_mask
};

void check_presence(const std::vector<Example>& examples) {
  const Example& first = examples[0];
  for (size_t i = 0; i < examples.size(); ++i) {
    const Example& e = examples[i];
    LOOM_CHECK(!e.input_ids.empty(), "[collator] example ", i, " of the batch has no tokens");
    LOOM_CHECK(e.token_type_ids.empty() == first.token_type_ids.empty() &&
                   e.labels.empty() == first.labels.empty() &&
                   e.label.has_value() == first.label.has_value(),
               "[collator] example ", i,
               " of the batch does not have the same fields as "
               "example 0 (token_type_ids, labels and label must be in all or none)");
  }
}

Padded pad_examples(const std::vector<Example>& examples, const PadOptions& o) {
  LOOM_CHECK(!examples.empty(), "[collator] cannot collate an empty list of examples");
  check_presence(examples);
  Padded p;
  p.batch = static_cast<int64_t>(examples.size());
  int64_t longest = 0;
  for (const Example& e : examples)
    longest = std::max(longest, static_cast<int64_t>(e.input_ids.size()));
  p.length = padded_length(longest, o);
  size_t n = static_cast<size_t>(p.batch * p.length);
  p.has_types = !examples[0].token_type_ids.empty();
  p.has_seq_labels = !examples[0].labels.empty();
  p.has_class_labels = examples[0].label.has_value();
  p.has_special = true;
  for (const Example& e : examples) p.has_special &= !e.special_tokens_mask.empty();
  p.input_ids.assign(n, o.pad_id);
  p.attention_mask.assign(n, 0);
  if (p.has_types) p.token_type_ids.assign(n, o.pad_type_id);
  if (p.has_seq_labels) p.labels.assign(n, kIgnoreIndex);
  std::vector<int64_t> special(n, 1);
  for (int64_t b = 0; b < p.batch; ++b) {
    const Example& e = examples[static_cast<size_t>(b)];
    int64_t len = static_cast<int64_t>(e.input_ids.size());
    // Left padding writes the row shifted right by the padding width.
    int64_t shift = o.pad_left ? p.length - len : 0;
    auto put = [&](std::vector<int64_t>& dst, const std::vector<int64_t>& src, int64_t fill) {
      for (int64_t t = 0; t < len; ++t)
        dst[static_cast<size_t>(b * p.length + shift + t)] =
            src.empty() ? fill : src[static_cast<size_t>(t)];
    };
    put(p.input_ids, e.input_ids, 0);
    put(p.attention_mask, e.attention_mask, 1);
    if (p.has_types) put(p.token_type_ids, e.token_type_ids, 0);
    if (p.has_seq_labels) put(p.labels, e.labels, 0);
    put(special, e.special_tokens_mask, 0);
    if (p.has_class_labels) p.class_labels.push_back(*e.label);
  }
  p.special.assign(special.begin(), special.end());
  return p;
}

Batch to_batch(const Padded& p) {
  Shape bt{p.batch, p.length};
  Batch out;
  out.set("input_ids", tensor_i64(p.input_ids, bt));
  out.set("attention_mask", tensor_i64(p.attention_mask, bt));
  if (p.has_types) out.set("token_type_ids", tensor_i64(p.token_type_ids, bt));
  if (p.has_seq_labels)
    out.set("labels", tensor_i64(p.labels, bt));
  else if (p.has_class_labels)
    out.set("labels", tensor_i64(p.class_labels, {p.batch}));
  return out;
}

void check_probability(double p, const char* name) {
  LOOM_CHECK(p >= 0.0 && p <= 1.0, "[collator] ", name, " must be in [0, 1], got ", p);
}

}  // namespace

void validate(const PadOptions& o) {
  LOOM_CHECK(o.pad_to_multiple_of >= 0, "[collator] pad_to_multiple_of must be >= 0, got ",
             o.pad_to_multiple_of);
  if (o.strategy == PadOptions::Strategy::kMaxLength)
    LOOM_CHECK(o.max_length > 0, "[collator] padding to max_length needs max_length > 0, got ",
               o.max_length);
  if (o.strategy != PadOptions::Strategy::kBuckets) return;
  LOOM_CHECK(!o.buckets.empty(), "[collator] padding to buckets needs at least one bucket");
  for (size_t i = 0; i < o.buckets.size(); ++i)
    LOOM_CHECK(o.buckets[i] > 0 && (i == 0 || o.buckets[i] > o.buckets[i - 1]),
               "[collator] bucket lengths must be positive and ascending; bucket ", i, " is ",
               o.buckets[i]);
}

int64_t padded_length(int64_t longest, const PadOptions& o) {
  validate(o);
  int64_t length = longest;
  switch (o.strategy) {
    case PadOptions::Strategy::kLongest:
      break;
    case PadOptions::Strategy::kMaxLength:
      LOOM_CHECK(longest <= o.max_length, "[collator] an example has ", longest,
                 " tokens, more than max_length ", o.max_length,
                 " (truncate when tokenizing, e.g. TextLinesOptions::max_length)");
      length = o.max_length;
      break;
    case PadOptions::Strategy::kBuckets: {
      LOOM_CHECK(longest <= o.buckets.back(), "[collator] an example has ", longest,
                 " tokens, more than the largest bucket ", o.buckets.back());
      for (int64_t b : o.buckets)
        if (b >= longest) {
          length = b;
          break;
        }
      break;
    }
  }
  int64_t m = o.pad_to_multiple_of;
  if (m > 0 && length % m != 0) length = (length / m + 1) * m;
  return length;
}

PaddingCollator::PaddingCollator(PadOptions options) : options_(std::move(options)) {
  validate(options_);
}

Batch PaddingCollator::collate(const std::vector<Example>& examples, const CollateContext&) const {
  return to_batch(pad_examples(examples, options_));
}

CausalLMCollator::CausalLMCollator(PadOptions options) : pad_(std::move(options)) {}

Batch CausalLMCollator::collate(const std::vector<Example>& examples, const CollateContext&) const {
  Padded p = pad_examples(examples, pad_.options());
  p.labels.resize(p.input_ids.size());
  for (size_t i = 0; i < p.labels.size(); ++i)
    p.labels[i] = p.attention_mask[i] != 0 ? p.input_ids[i] : kIgnoreIndex;
  p.has_seq_labels = true;
  return to_batch(p);
}

MaskedLMCollator::MaskedLMCollator(PadOptions pad, MaskingOptions masking)
    : pad_(std::move(pad)), masking_(std::move(masking)) {
  const MaskingOptions& m = masking_;
  check_probability(m.mlm_probability, "mlm_probability");
  check_probability(m.mask_replace_prob, "mask_replace_prob");
  check_probability(m.random_replace_prob, "random_replace_prob");
  LOOM_CHECK(m.mask_replace_prob + m.random_replace_prob <= 1.0 + 1e-12,
             "[collator] mask_replace_prob + random_replace_prob must be <= 1, got ",
             m.mask_replace_prob, " + ", m.random_replace_prob);
  LOOM_CHECK(m.mask_id >= 0, "[collator] masked LM needs the mask token id (mask_id), got ",
             m.mask_id);
  LOOM_CHECK(m.vocab_size > m.mask_id, "[collator] vocab_size ", m.vocab_size,
             " must exceed mask_id ", m.mask_id);
}

Batch MaskedLMCollator::collate(const std::vector<Example>& examples,
                                const CollateContext& context) const {
  const MaskingOptions& m = masking_;
  Padded p = pad_examples(examples, pad_.options());
  const float p_chosen = static_cast<float>(m.mlm_probability);
  const float p_replace = static_cast<float>(m.mask_replace_prob);
  const double remaining = 1.0 - m.mask_replace_prob;
  const float p_random =
      remaining > 0 ? static_cast<float>(m.random_replace_prob / remaining) : 0.0f;
  const uint64_t offset =
      (static_cast<uint64_t>(context.epoch) << 32) + static_cast<uint64_t>(context.batch_index);
  const std::array<uint32_t, 2> key{static_cast<uint32_t>(m.seed),
                                    static_cast<uint32_t>(m.seed >> 32)};
  auto uniform = [](uint32_t w) { return static_cast<float>(w >> 8) * (1.0f / 16777216.0f); };
  p.labels.assign(p.input_ids.size(), kIgnoreIndex);
  p.has_seq_labels = true;
  for (int64_t b = 0; b < p.batch; ++b) {
    int64_t len = static_cast<int64_t>(examples[static_cast<size_t>(b)].input_ids.size());
    int64_t shift = pad_.options().pad_left ? p.length - len : 0;
    for (int64_t t = 0; t < len; ++t) {
      size_t i = static_cast<size_t>(b * p.length + shift + t);
      int64_t id = p.input_ids[i];
      bool special = p.attention_mask[i] == 0 || (p.has_special && p.special[i]);
      if (!p.has_special)
        for (int64_t s : m.special_ids) special |= (id == s);
      if (special) continue;
      // Counter (token, example, offset): independent of the padded length.
      auto w = philox::block({static_cast<uint32_t>(t), static_cast<uint32_t>(b),
                              static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32)},
                             key);
      if (!(uniform(w[0]) < p_chosen)) continue;
      p.labels[i] = id;
      if (uniform(w[1]) < p_replace) {
        p.input_ids[i] = m.mask_id;
      } else if (uniform(w[2]) < p_random) {
        // Multiply-shift maps the word onto [0, vocab_size) (bias < vocab_size / 2^32).
        p.input_ids[i] = static_cast<int64_t>(
            (static_cast<uint64_t>(w[3]) * static_cast<uint64_t>(m.vocab_size)) >> 32);
      }
    }
  }
  return to_batch(p);
}

void mask_padding_labels(Batch& batch, const std::vector<bool>& padding) {
  if (padding.empty() || !batch.contains("labels")) return;
  const Tensor& labels = batch.at("labels");
  LOOM_CHECK(labels.dim() >= 1 && labels.size(0) == static_cast<int64_t>(padding.size()),
             "[collator] padding flags for ", padding.size(), " examples, the batch has ",
             labels.dim() >= 1 ? labels.size(0) : 0, " (labels ", to_string(labels.shape()), ")");
  LOOM_CHECK(labels.dtype() == DType::i64 || labels.dtype() == DType::i32,
             "[collator] cannot mask labels of dtype ", dtype_name(labels.dtype()),
             " with ignore_index -100 (padding samples need integer labels)");
  bool any = false;
  for (bool p : padding) any |= p;
  if (!any) return;
  std::vector<int64_t> values = labels.to_vector<int64_t>();
  const size_t row = values.size() / padding.size();
  for (size_t b = 0; b < padding.size(); ++b)
    if (padding[b])
      std::fill_n(values.begin() + static_cast<std::ptrdiff_t>(b * row), row, kIgnoreIndex);
  const DType dtype = labels.dtype();
  Tensor masked = tensor_i64(values, labels.shape(), labels.device());
  batch.set("labels", dtype == DType::i64 ? masked : masked.to(dtype));
}

PaddingMaskCollator::PaddingMaskCollator(std::shared_ptr<const Collator> inner)
    : inner_(std::move(inner)) {
  LOOM_CHECK(inner_ != nullptr, "[collator] PaddingMaskCollator: the inner collator is null");
}

Batch PaddingMaskCollator::collate(const std::vector<Example>& examples,
                                   const CollateContext& context) const {
  Batch batch = inner_->collate(examples, context);
  // A padding-free batch flattened into one row (data/sft/sft_packing.h)
  // masked its repeats' labels itself.
  const bool flattened = batch.contains("position_ids") && batch.size() == 1 && examples.size() > 1;
  if (!flattened) mask_padding_labels(batch, context.padding);
  return batch;
}

}  // namespace loom::data
