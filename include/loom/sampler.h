// Samplers: the order in which a DataLoader visits dataset indices in one
// epoch (torch.utils.data's SequentialSampler, RandomSampler and
// DistributedSampler). Every order is a pure function of the sampler's
// settings and the epoch number — nothing is stateful — so a resumed run sees
// the same order, and every replica can compute every other one's.
//
//   loom::data::RandomSampler s(1000, /*seed=*/42);
//   s.indices(0);  // a permutation of 0..999; the same on every call
//   s.indices(1);  // a different permutation
//
//   // Replica 1 of 4: ceil(1000 / 4) = 250 indices, padded by repetition.
//   loom::data::DistributedSampler d(1000, {.num_replicas = 4, .rank = 1, .seed = 42});
//   // 1001 samples on 4 replicas: ceil = 251 each, 1004 in all; replicas 1,
//   // 2 and 3 end with a repeat, which padding(epoch) marks (the Trainer
//   // gives it ignore_index labels, so it counts zero).
#pragma once

#include <cstdint>
#include <vector>

namespace loom::data {

/// Dataset indices for one epoch.
class Sampler {
 public:
  virtual ~Sampler() = default;
  /// The indices of epoch `epoch` (>= 0), each in [0, dataset size).
  virtual std::vector<int64_t> indices(int64_t epoch) const = 0;
  /// Number of indices per epoch (the same for every epoch).
  virtual int64_t size() const = 0;
  /// One flag per index of indices(epoch): true where the index only pads
  /// the epoch (a repeat that makes the replicas' counts equal, which a
  /// trainer must count zero); empty when no index is padding (the default).
  /// Throws loom::Error for epoch < 0.
  virtual std::vector<bool> padding(int64_t epoch) const;
};

/// A permutation of [0, n) from a seeded Fisher–Yates shuffle (Knuth,
/// TAOCP vol. 2, Algorithm 3.4.2P) driven by Philox4x32-10 with key = seed and
/// counter offset = epoch; swap partner j of position i is
/// floor(u64 * (i + 1) / 2^64) for the next 64 random bits u64. Not the same
/// permutation as torch.randperm. Throws loom::Error for n < 0 or epoch < 0.
std::vector<int64_t> shuffled_indices(int64_t n, uint64_t seed, int64_t epoch);

/// 0, 1, ..., n-1 every epoch.
class SequentialSampler : public Sampler {
 public:
  /// Throws loom::Error for n < 0.
  explicit SequentialSampler(int64_t n);
  std::vector<int64_t> indices(int64_t epoch) const override;
  int64_t size() const override { return n_; }

 private:
  int64_t n_;
};

/// shuffled_indices(n, seed, epoch): a new permutation every epoch.
class RandomSampler : public Sampler {
 public:
  /// Throws loom::Error for n < 0.
  RandomSampler(int64_t n, uint64_t seed);
  std::vector<int64_t> indices(int64_t epoch) const override;
  int64_t size() const override { return n_; }

 private:
  int64_t n_;
  uint64_t seed_;
};

/// DistributedSampler settings (torch's names and defaults).
struct DistributedOptions {
  int64_t num_replicas = 1;
  int64_t rank = 0;
  bool shuffle = true;
  uint64_t seed = 0;
  /// false: pad the epoch's order with its own first indices (repeated as
  /// often as needed) to a multiple of num_replicas; true: drop the tail.
  bool drop_last = false;
};

/// torch.utils.data.DistributedSampler: the epoch's order (shuffled_indices
/// when shuffle, else 0..n-1) is padded or cut to total = num_samples *
/// num_replicas, where num_samples = ceil(n / R) (drop_last: floor(n / R)),
/// and replica `rank` takes positions rank, rank + R, rank + 2R, ... So every
/// replica gets exactly num_samples indices, hence the same number of batches.
/// For shuffle = false the indices equal torch's. Positions >= n of the padded
/// order are padding (padding()): at most one per replica, its last index
/// (as (num_samples - 1) * R < n), on the replicas rank >= n - (num_samples -
/// 1) * R; with n < R a replica's only index may be padding. So the replicas'
/// non-padding indices are the epoch's order, each index exactly once.
class DistributedSampler : public Sampler {
 public:
  /// Throws loom::Error for n < 0, num_replicas < 1 or rank outside
  /// [0, num_replicas).
  DistributedSampler(int64_t n, DistributedOptions options);
  std::vector<int64_t> indices(int64_t epoch) const override;
  int64_t size() const override { return num_samples_; }
  /// True at the positions of indices() that repeat the order's start; empty
  /// when no replica pads (drop_last, or R divides n). The same every epoch.
  std::vector<bool> padding(int64_t epoch) const override;
  /// Whether any replica gets a padding index: !drop_last and n % R != 0.
  bool pads() const;

 private:
  int64_t n_;
  DistributedOptions options_;
  int64_t num_samples_;
};

}  // namespace loom::data
