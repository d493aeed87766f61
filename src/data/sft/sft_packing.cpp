// SFT packing (sft_packing.h): TRL's best-fit decreasing and wrapped
// strategies, and the padding-free collator. The BFD order follows TRL's
// _pack_bfd (trl/data_utils.py): a stable descending sort by length, then
// for each item the smallest remaining space that holds it (TRL finds it
// with a segment tree over the spaces 1..capacity; a std::map of space ->
// FIFO of bins is the same search), bins with equal space taken first in,
// first out. Assumes examples carry per-token labels (the sft task's).
#include "data/sft/sft_packing.h"

#include <algorithm>
#include <deque>
#include <map>
#include <numeric>

#include "loom/error.h"

namespace loom::data {

std::vector<std::vector<size_t>> bfd_bins(const std::vector<int64_t>& lengths, int64_t capacity) {
  LOOM_CHECK(capacity >= 1, "[packing] the bin capacity (max_length) must be >= 1, got ", capacity);
  std::vector<size_t> order(lengths.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return lengths[a] > lengths[b]; });
  std::vector<std::vector<size_t>> bins;
  std::map<int64_t, std::deque<size_t>> open;  // remaining space -> bins, first in first out
  for (size_t item : order) {
    const int64_t len = lengths[item];
    LOOM_CHECK(len >= 1 && len <= capacity, "[packing] item ", item, " has length ", len,
               ", outside [1, ", capacity, "]");
    auto fit = open.lower_bound(len);  // the least space that holds it
    size_t bin = bins.size();
    int64_t space = capacity;
    if (fit != open.end()) {
      space = fit->first;
      bin = fit->second.front();
      fit->second.pop_front();
      if (fit->second.empty()) open.erase(fit);
    } else {
      bins.emplace_back();
    }
    bins[bin].push_back(item);
    if (space - len > 0) open[space - len].push_back(bin);
  }
  return bins;
}

namespace {

void check_packable_examples(const std::vector<Example>& examples, int64_t max_length) {
  LOOM_CHECK(max_length >= 1, "[packing] max_length must be >= 1, got ", max_length);
  for (size_t i = 0; i < examples.size(); ++i)
    LOOM_CHECK(
        !examples[i].input_ids.empty() && examples[i].labels.size() == examples[i].input_ids.size(),
        "[packing] example ", i, " has ", examples[i].input_ids.size(), " tokens and ",
        examples[i].labels.size(), " labels (packing needs per-token labels)");
}

// The ids of a sequence of a row: a packed row's attention_mask holds them
// (1-based); an unpacked example is one sequence.
int64_t packed_sequence_index(const Example& e, size_t t) {
  return e.attention_mask.empty() ? 1 : e.attention_mask[t];
}

}  // namespace

std::vector<Example> pack_bfd(const std::vector<Example>& examples, int64_t max_length) {
  check_packable_examples(examples, max_length);
  std::vector<int64_t> lengths(examples.size());
  for (size_t i = 0; i < examples.size(); ++i)
    lengths[i] = std::min<int64_t>(static_cast<int64_t>(examples[i].input_ids.size()), max_length);
  std::vector<Example> rows;
  for (const std::vector<size_t>& bin : bfd_bins(lengths, max_length)) {
    Example row;
    int64_t seq = 0;
    for (size_t i : bin) {
      const Example& e = examples[i];
      const auto n = static_cast<std::ptrdiff_t>(lengths[i]);
      row.input_ids.insert(row.input_ids.end(), e.input_ids.begin(), e.input_ids.begin() + n);
      row.labels.insert(row.labels.end(), e.labels.begin(), e.labels.begin() + n);
      row.attention_mask.insert(row.attention_mask.end(), static_cast<size_t>(n), ++seq);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<Example> pack_wrapped(const std::vector<Example>& examples, int64_t max_length) {
  check_packable_examples(examples, max_length);
  std::vector<int64_t> ids, labels;
  for (const Example& e : examples) {
    ids.insert(ids.end(), e.input_ids.begin(), e.input_ids.end());
    labels.insert(labels.end(), e.labels.begin(), e.labels.end());
  }
  std::vector<Example> rows;
  for (size_t at = 0; at < ids.size(); at += static_cast<size_t>(max_length)) {
    const size_t end = std::min(ids.size(), at + static_cast<size_t>(max_length));
    Example row;
    row.input_ids.assign(ids.begin() + static_cast<std::ptrdiff_t>(at),
                         ids.begin() + static_cast<std::ptrdiff_t>(end));
    row.labels.assign(labels.begin() + static_cast<std::ptrdiff_t>(at),
                      labels.begin() + static_cast<std::ptrdiff_t>(end));
    rows.push_back(std::move(row));
  }
  return rows;
}

PaddingFreeCollator::PaddingFreeCollator(PaddingFreeOptions options)
    : options_(std::move(options)) {
  LOOM_CHECK(!options_.buckets.empty(), "[collator] padding-free batches need a row length");
  for (size_t i = 0; i < options_.buckets.size(); ++i)
    LOOM_CHECK(options_.buckets[i] > 0 && (i == 0 || options_.buckets[i] > options_.buckets[i - 1]),
               "[collator] padding-free row lengths must be positive and ascending; length ", i,
               " is ", options_.buckets[i]);
}

namespace {

// One row under construction: ids, labels, positions.
struct PaddingFreeRow {
  std::vector<int64_t> ids, labels, pos;
};

// Appends example `e` to `row`: positions restart at each sequence, whose
// first label is -100; a data-parallel padding repeat gets no label at all.
void append_padding_free(PaddingFreeRow& row, const Example& e, bool padding) {
  int64_t p = 0;
  for (size_t t = 0; t < e.input_ids.size(); ++t) {
    if (t > 0 && packed_sequence_index(e, t) != packed_sequence_index(e, t - 1)) p = 0;
    row.ids.push_back(e.input_ids[t]);
    row.labels.push_back(p == 0 || padding ? kIgnoreIndex : e.labels[t]);
    row.pos.push_back(p++);
  }
}

}  // namespace

Batch PaddingFreeCollator::collate(const std::vector<Example>& examples,
                                   const CollateContext& context) const {
  LOOM_CHECK(!examples.empty(), "[collator] an empty batch");
  std::vector<PaddingFreeRow> rows(options_.flatten ? 1 : examples.size());
  for (size_t i = 0; i < examples.size(); ++i) {
    const Example& e = examples[i];
    LOOM_CHECK(!e.input_ids.empty() && e.labels.size() == e.input_ids.size(), "[collator] example ",
               i, " of the batch has ", e.input_ids.size(), " tokens and ", e.labels.size(),
               " labels (padding-free batches need per-token labels)");
    const bool padding = i < context.padding.size() && context.padding[i];
    append_padding_free(rows[options_.flatten ? 0 : i], e, padding);
  }
  size_t longest = 0;
  for (const PaddingFreeRow& r : rows) longest = std::max(longest, r.ids.size());
  PadOptions pad;
  pad.strategy = PadOptions::Strategy::kBuckets;
  pad.buckets = options_.buckets;
  const int64_t length = padded_length(static_cast<int64_t>(longest), pad);
  const auto n = static_cast<int64_t>(rows.size());
  std::vector<int64_t> ids, labels, pos;
  for (PaddingFreeRow& r : rows) {
    const size_t fill = static_cast<size_t>(length) - r.ids.size();
    ids.insert(ids.end(), r.ids.begin(), r.ids.end());
    ids.insert(ids.end(), fill, options_.pad_id);
    labels.insert(labels.end(), r.labels.begin(), r.labels.end());
    labels.insert(labels.end(), fill, kIgnoreIndex);
    pos.insert(pos.end(), r.pos.begin(), r.pos.end());
    pos.insert(pos.end(), fill, 0);
  }
  Batch out;
  out.set("input_ids", tensor_i64(ids, {n, length}));
  out.set("labels", tensor_i64(labels, {n, length}));
  out.set("position_ids", tensor_i64(pos, {n, length}));
  return out;
}

}  // namespace loom::data
