// Tests of the samplers (loom/sampler.h): the shuffle is a permutation and a
// pure function of (seed, epoch); the distributed split equals torch's
// DistributedSampler (fixtures below printed by torch 2.x with shuffle=False:
//   [list(DistributedSampler(range(n), R, r, shuffle=False, drop_last=d))
//    for r in range(R)])
// and every replica gets the same number of indices and batches.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "loom/dataloader.h"
#include "loom/error.h"
#include "loom/sampler.h"

namespace loom::data {
namespace {

TEST(Sampler, ShuffleIsAPermutationAndAPureFunctionOfSeedAndEpoch) {
  std::vector<int64_t> a = shuffled_indices(1000, 42, 0);
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(sorted[i], i);
  EXPECT_EQ(a, shuffled_indices(1000, 42, 0));
  EXPECT_NE(a, shuffled_indices(1000, 42, 1));
  EXPECT_NE(a, shuffled_indices(1000, 43, 0));
  RandomSampler s(1000, 42);
  EXPECT_EQ(s.indices(0), a);
  EXPECT_EQ(s.indices(5), RandomSampler(1000, 42).indices(5));  // a fresh sampler agrees
  EXPECT_EQ(s.size(), 1000);
  EXPECT_TRUE(shuffled_indices(0, 1, 0).empty());
  EXPECT_EQ(shuffled_indices(1, 1, 0), std::vector<int64_t>{0});
}

TEST(Sampler, ShuffleIsUniformEnough) {
  // Over 6000 epochs every one of the 6 orders of 3 items appears ~1000 times
  // (binomial sd ~29; 150 is over 5 sd).
  std::map<std::vector<int64_t>, int> counts;
  for (int64_t epoch = 0; epoch < 6000; ++epoch) ++counts[shuffled_indices(3, 9, epoch)];
  ASSERT_EQ(counts.size(), 6u);
  for (const auto& [order, n] : counts) EXPECT_NEAR(n, 1000, 150);
}

TEST(Sampler, SequentialAndErrors) {
  EXPECT_EQ(SequentialSampler(4).indices(7), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_THROW(SequentialSampler(-1), Error);
  EXPECT_THROW(shuffled_indices(3, 0, -1), Error);
  EXPECT_THROW(DistributedSampler(10, {.num_replicas = 0}), Error);
  try {
    DistributedSampler(10, {.num_replicas = 2, .rank = 2});
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[sampler] rank 2 is outside [0, 2)");
  }
}

std::vector<std::vector<int64_t>> split(int64_t n, int64_t replicas, bool drop_last,
                                        bool shuffle = false, int64_t epoch = 0) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t r = 0; r < replicas; ++r)
    out.push_back(DistributedSampler(n, {.num_replicas = replicas,
                                         .rank = r,
                                         .shuffle = shuffle,
                                         .seed = 5,
                                         .drop_last = drop_last})
                      .indices(epoch));
  return out;
}

TEST(Sampler, DistributedMatchesTorchWithoutShuffle) {
  using V = std::vector<std::vector<int64_t>>;
  EXPECT_EQ(split(10, 3, false), (V{{0, 3, 6, 9}, {1, 4, 7, 0}, {2, 5, 8, 1}}));
  EXPECT_EQ(split(10, 3, true), (V{{0, 3, 6}, {1, 4, 7}, {2, 5, 8}}));
  EXPECT_EQ(split(2, 4, false), (V{{0}, {1}, {0}, {1}}));
  EXPECT_EQ(split(7, 2, true), (V{{0, 2, 4}, {1, 3, 5}}));
}

TEST(Sampler, DistributedShufflePartitionsOneShuffledOrder) {
  // drop_last = false covers every index; with n % R == 0 exactly once.
  for (bool drop_last : {false, true}) {
    auto parts = split(12, 4, drop_last, true, 3);
    std::multiset<int64_t> seen;
    for (const auto& p : parts) seen.insert(p.begin(), p.end());
    EXPECT_EQ(seen.size(), 12u);
    for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(seen.count(i), 1u) << i;
    // Rank r takes positions r, r + R, ... of the shuffled order.
    std::vector<int64_t> order = shuffled_indices(12, 5, 3);
    for (int64_t r = 0; r < 4; ++r)
      for (size_t k = 0; k < parts[r].size(); ++k) EXPECT_EQ(parts[r][k], order[r + 4 * k]);
  }
  EXPECT_NE(split(12, 4, false, true, 3), split(12, 4, false, true, 4));
}

// Padding flags of every replica for (n, R, drop_last, shuffle).
std::vector<std::vector<bool>> padding_flags(int64_t n, int64_t replicas, bool drop_last,
                                             bool shuffle = false) {
  std::vector<std::vector<bool>> out;
  for (int64_t r = 0; r < replicas; ++r)
    out.push_back(DistributedSampler(n, {.num_replicas = replicas,
                                         .rank = r,
                                         .shuffle = shuffle,
                                         .seed = 5,
                                         .drop_last = drop_last})
                      .padding(0));
  return out;
}

TEST(Sampler, DistributedMarksTheRepeatedIndicesAsPadding) {
  using F = std::vector<std::vector<bool>>;
  // split(10, 3) is {0,3,6,9}, {1,4,7,0}, {2,5,8,1}: the 0 and 1 at the
  // end of replicas 1 and 2 are the repeats.
  EXPECT_EQ(
      padding_flags(10, 3, false),
      (F{{false, false, false, false}, {false, false, false, true}, {false, false, false, true}}));
  // n < R: {0}, {1}, {0}, {1}: replicas 2 and 3 hold nothing but padding.
  EXPECT_EQ(padding_flags(2, 4, false), (F{{false}, {false}, {true}, {true}}));
  EXPECT_EQ(padding_flags(15, 2, false).back().back(), true);
  // No replica pads: empty flags (none is padding).
  EXPECT_EQ(padding_flags(10, 3, true), (F(3)));
  EXPECT_EQ(padding_flags(12, 4, false), (F(4)));
  EXPECT_FALSE(DistributedSampler(12, {.num_replicas = 4}).pads());
  EXPECT_TRUE(DistributedSampler(13, {.num_replicas = 4}).pads());
  EXPECT_FALSE(DistributedSampler(13, {.num_replicas = 4, .drop_last = true}).pads());
  // The other samplers never pad.
  EXPECT_TRUE(RandomSampler(3, 1).padding(2).empty());
  EXPECT_TRUE(SequentialSampler(4).padding(0).empty());
  EXPECT_THROW(RandomSampler(3, 1).padding(-1), Error);
  EXPECT_THROW(DistributedSampler(4, {.num_replicas = 2}).padding(-1), Error);
}

TEST(Sampler, NonPaddingIndicesOfAllReplicasAreTheOrderOnce) {
  // Whatever n, R and epoch: the indices not marked padding are every
  // index of the epoch's order exactly once, and the padding ones only repeat.
  for (int64_t n : {1, 2, 5, 7, 13, 16, 31}) {
    for (int64_t replicas : {1, 2, 3, 4, 8}) {
      for (int64_t epoch : {0, 3}) {
        std::multiset<int64_t> real;
        int64_t pads = 0;
        for (int64_t r = 0; r < replicas; ++r) {
          DistributedSampler s(n, {.num_replicas = replicas, .rank = r, .seed = 9});
          std::vector<int64_t> idx = s.indices(epoch);
          std::vector<bool> pad = s.padding(epoch);
          if (pad.empty()) pad.assign(idx.size(), false);
          ASSERT_EQ(idx.size(), pad.size());
          for (size_t k = 0; k < idx.size(); ++k) {
            if (pad[k]) {
              ++pads;
              EXPECT_EQ(k + 1, idx.size()) << "padding only at a replica's end";
            } else {
              real.insert(idx[k]);
            }
          }
        }
        const int64_t total = (n + replicas - 1) / replicas * replicas;
        EXPECT_EQ(pads, total - n) << n << " " << replicas;
        ASSERT_EQ(static_cast<int64_t>(real.size()), n) << n << " " << replicas;
        for (int64_t i = 0; i < n; ++i) EXPECT_EQ(real.count(i), 1u) << i;
      }
    }
  }
}

// Batches each replica's DataLoader yields for (n, R, batch size, drop_last).
std::vector<int64_t> batches_per_replica(int64_t n, int64_t replicas, int64_t batch,
                                         bool drop_last) {
  struct Ids : Dataset {
    int64_t n;
    explicit Ids(int64_t n) : n(n) {}
    int64_t size() const override { return n; }
    Example get(int64_t i) const override {
      Example e;
      e.input_ids = {i};
      return e;
    }
  };
  auto ds = std::make_shared<Ids>(n);
  auto collator = std::make_shared<PaddingCollator>();
  std::vector<int64_t> counts;
  for (int64_t r = 0; r < replicas; ++r) {
    auto sampler = std::make_shared<DistributedSampler>(
        n,
        DistributedOptions{.num_replicas = replicas, .rank = r, .seed = 1, .drop_last = drop_last});
    DataLoader loader(ds, collator, {.batch_size = batch, .drop_last = drop_last}, sampler);
    int64_t seen = 0;
    for (const Batch& b : loader) {
      (void)b;
      ++seen;
    }
    EXPECT_EQ(seen, loader.size());
    counts.push_back(seen);
  }
  return counts;
}

TEST(Sampler, EveryReplicaGetsTheSameNumberOfBatches) {
  for (int64_t n : {1, 7, 10, 33, 64, 101}) {
    for (int64_t replicas : {1, 2, 3, 8}) {
      for (int64_t batch : {1, 4, 5}) {
        for (bool drop_last : {false, true}) {
          std::vector<int64_t> c = batches_per_replica(n, replicas, batch, drop_last);
          for (int64_t x : c) EXPECT_EQ(x, c[0]) << n << " " << replicas << " " << batch;
          // Expected count: per-replica samples, then batches.
          int64_t samples = drop_last ? n / replicas : (n + replicas - 1) / replicas;
          int64_t expect = drop_last ? samples / batch : (samples + batch - 1) / batch;
          EXPECT_EQ(c[0], expect) << n << " " << replicas << " " << batch << " " << drop_last;
        }
      }
    }
  }
}

}  // namespace
}  // namespace loom::data
