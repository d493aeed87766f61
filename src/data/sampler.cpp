// Samplers of loom/sampler.h. The shuffle is Fisher–Yates over Philox4x32-10
// words, so an epoch's order depends only on (seed, epoch, n). The
// distributed split follows torch.utils.data.DistributedSampler.__iter__.
#include "loom/sampler.h"

#include <numeric>

#include "core/philox.h"
#include "loom/error.h"

namespace loom::data {

std::vector<int64_t> shuffled_indices(int64_t n, uint64_t seed, int64_t epoch) {
  LOOM_CHECK(n >= 0, "[sampler] dataset size must be >= 0, got ", n);
  LOOM_CHECK(epoch >= 0, "[sampler] epoch must be >= 0, got ", epoch);
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  const uint64_t offset = static_cast<uint64_t>(epoch);
  uint64_t draw = 0;  // index of the next 64-bit draw (two Philox words)
  for (int64_t i = n - 1; i > 0; --i, ++draw) {
    uint64_t hi = philox::word(seed, offset, 2 * draw);
    uint64_t lo = philox::word(seed, offset, 2 * draw + 1);
    unsigned __int128 u = (hi << 32) | lo;
    auto j = static_cast<int64_t>((u * static_cast<unsigned __int128>(i + 1)) >> 64);
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  return order;
}

SequentialSampler::SequentialSampler(int64_t n) : n_(n) {
  LOOM_CHECK(n >= 0, "[sampler] dataset size must be >= 0, got ", n);
}

std::vector<int64_t> SequentialSampler::indices(int64_t epoch) const {
  LOOM_CHECK(epoch >= 0, "[sampler] epoch must be >= 0, got ", epoch);
  std::vector<int64_t> order(static_cast<size_t>(n_));
  std::iota(order.begin(), order.end(), int64_t{0});
  return order;
}

std::vector<bool> Sampler::padding(int64_t epoch) const {
  LOOM_CHECK(epoch >= 0, "[sampler] epoch must be >= 0, got ", epoch);
  return {};
}

RandomSampler::RandomSampler(int64_t n, uint64_t seed) : n_(n), seed_(seed) {
  LOOM_CHECK(n >= 0, "[sampler] dataset size must be >= 0, got ", n);
}

std::vector<int64_t> RandomSampler::indices(int64_t epoch) const {
  return shuffled_indices(n_, seed_, epoch);
}

DistributedSampler::DistributedSampler(int64_t n, DistributedOptions options)
    : n_(n), options_(options) {
  LOOM_CHECK(n >= 0, "[sampler] dataset size must be >= 0, got ", n);
  LOOM_CHECK(options.num_replicas >= 1, "[sampler] num_replicas must be >= 1, got ",
             options.num_replicas);
  LOOM_CHECK(options.rank >= 0 && options.rank < options.num_replicas, "[sampler] rank ",
             options.rank, " is outside [0, ", options.num_replicas, ")");
  const int64_t r = options.num_replicas;
  num_samples_ = options.drop_last ? n / r : (n + r - 1) / r;
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  std::vector<int64_t> order = options_.shuffle ? shuffled_indices(n_, options_.seed, epoch)
                                                : SequentialSampler(n_).indices(epoch);
  const int64_t r = options_.num_replicas;
  const size_t total = static_cast<size_t>(num_samples_ * r);
  // Pad by repeating the order from its start (as often as needed), or cut.
  for (size_t i = order.size(); i < total; ++i) order.push_back(order[i % static_cast<size_t>(n_)]);
  order.resize(total);
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(num_samples_));
  for (size_t i = static_cast<size_t>(options_.rank); i < total; i += static_cast<size_t>(r))
    mine.push_back(order[i]);
  return mine;
}

// Replica `rank` holds positions rank + k * R of the padded order; those at
// n or beyond are the repeats.
std::vector<bool> DistributedSampler::padding(int64_t epoch) const {
  LOOM_CHECK(epoch >= 0, "[sampler] epoch must be >= 0, got ", epoch);
  if (!pads()) return {};
  std::vector<bool> flags(static_cast<size_t>(num_samples_), false);
  for (int64_t k = 0; k < num_samples_; ++k)
    flags[static_cast<size_t>(k)] = options_.rank + k * options_.num_replicas >= n_;
  return flags;
}

bool DistributedSampler::pads() const { return num_samples_ * options_.num_replicas > n_; }

}  // namespace loom::data
