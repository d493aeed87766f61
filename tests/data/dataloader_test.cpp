// Tests of the DataLoader (loom/dataloader.h): batching and drop_last, the
// same batches in the same order for any number of workers, bounded prefetch,
// worker errors re-raised in the caller as loom::Error with the original
// message, and a prompt, clean stop when the consumer leaves early.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "loom/dataloader.h"
#include "loom/error.h"

namespace loom::data {
namespace {

using Clock = std::chrono::steady_clock;

// Example i has ids {i, i+1, ..., i + (i % 5)}; optionally sleeps in get()
// and throws for one index.
struct CountingDataset : Dataset {
  int64_t n;
  std::chrono::milliseconds delay{0};
  int64_t throw_at = -1;
  bool throw_loom_error = false;
  mutable std::atomic<int64_t> gets{0};
  explicit CountingDataset(int64_t n) : n(n) {}
  int64_t size() const override { return n; }
  Example get(int64_t i) const override {
    ++gets;
    if (delay.count()) std::this_thread::sleep_for(delay);
    if (i == throw_at) {
      if (throw_loom_error) fail("[my_dataset] record ", i, " is corrupt");
      throw std::runtime_error("disk on fire at " + std::to_string(i));
    }
    Example e;
    for (int64_t k = 0; k <= i % 5; ++k) e.input_ids.push_back(i + k);
    return e;
  }
};

std::vector<std::vector<int64_t>> collect(const DataLoader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (const Batch& b : loader) out.push_back(b.at("input_ids").to_vector<int64_t>());
  return out;
}

TEST(DataLoader, BatchesInSamplerOrderWithAndWithoutWorkers) {
  auto ds = std::make_shared<CountingDataset>(10);
  auto collator = std::make_shared<PaddingCollator>(PadOptions{.pad_id = -1});
  DataLoader serial(ds, collator, {.batch_size = 4});
  EXPECT_EQ(serial.size(), 3);
  auto batches = collect(serial);
  ASSERT_EQ(batches.size(), 3u);
  // Batch 0: examples 0..3 -> lengths 1..4, padded to 4 with -1.
  EXPECT_EQ(batches[0], (std::vector<int64_t>{0, -1, -1, -1, 1, 2, -1, -1, 2, 3, 4, -1,  //
                                              3, 4, 5, 6}));
  EXPECT_EQ(batches[2], (std::vector<int64_t>{8, 9, 10, 11, -1, 9, 10, 11, 12, 13}));  // [2, 5]
  DataLoader dropping(ds, collator, {.batch_size = 4, .drop_last = true});
  EXPECT_EQ(dropping.size(), 2);
  EXPECT_EQ(collect(dropping).size(), 2u);
  for (int workers : {1, 2, 3, 8}) {
    DataLoader parallel(ds, collator, {.batch_size = 4, .num_workers = workers});
    EXPECT_EQ(collect(parallel), batches) << workers << " workers";
  }
  // Shuffled: the same multiset of examples, in the sampler's order, per epoch.
  DataLoader shuffled(ds, collator,
                      {.batch_size = 10, .shuffle = true, .seed = 3, .num_workers = 2});
  shuffled.set_epoch(2);
  auto first = collect(shuffled);
  std::vector<int64_t> order = shuffled_indices(10, 3, 2);
  auto firsts = first[0];
  int64_t T = static_cast<int64_t>(firsts.size() / 10);
  for (int64_t r = 0; r < 10; ++r) EXPECT_EQ(firsts[r * T], order[r]);
  EXPECT_EQ(collect(shuffled), first);
}

// Records the batch number the DataLoader passes, as its only output.
struct BatchNumberCollator : Collator {
  Batch collate(const std::vector<Example>& examples, const CollateContext& c) const override {
    Batch b = PaddingCollator(PadOptions{.pad_id = -1}).collate(examples, c);
    b.set("batch_index", tensor_i64({c.epoch, c.batch_index}, {2}));
    return b;
  }
};

// Records the padding flags the DataLoader passes (1 = padding, one per example).
struct PaddingFlagsCollator : Collator {
  Batch collate(const std::vector<Example>& examples, const CollateContext& c) const override {
    Batch b = CausalLMCollator().collate(examples, c);
    std::vector<int64_t> flags(c.padding.begin(), c.padding.end());
    if (!flags.empty()) b.set("padding", tensor_i64(flags, {static_cast<int64_t>(flags.size())}));
    return b;
  }
};

// Data parallel (issue 12): 7 examples on 2 replicas, batch 3: replica 1
// holds positions 1, 3, 5 and 7 of the order, 7 being a repeat of position
// 0. Its flag reaches the collator with the batch (also after a skip, with
// workers), and PaddingMaskCollator turns that example's labels to -100.
TEST(DataLoader, SamplerPaddingReachesTheCollatorAndMasksLabels) {
  auto ds = std::make_shared<CountingDataset>(7);
  auto sampler = std::make_shared<DistributedSampler>(
      7, DistributedOptions{.num_replicas = 2, .rank = 1, .seed = 4});
  const std::vector<int64_t> order = shuffled_indices(7, 4, 1);
  for (int workers : {0, 2}) {
    DataLoader flags(ds, std::make_shared<PaddingFlagsCollator>(),
                     {.batch_size = 3, .num_workers = workers}, sampler);
    auto s = flags.stream(1);
    auto b0 = s->next(), b1 = s->next();
    ASSERT_TRUE(b0 && b1);
    EXPECT_FALSE(s->next().has_value());
    EXPECT_FALSE(b0->contains("padding")) << "no flags for a batch without padding";
    EXPECT_EQ(b1->at("padding").to_vector<int64_t>(), std::vector<int64_t>{1});
    EXPECT_EQ(b1->at("input_ids").to_vector<int64_t>()[0], order[0]) << "the repeat of position 0";
    auto tail = flags.stream(1, 1)->next();
    ASSERT_TRUE(tail);
    EXPECT_EQ(tail->at("padding").to_vector<int64_t>(), std::vector<int64_t>{1}) << workers;

    auto masking = std::make_shared<PaddingMaskCollator>(std::make_shared<CausalLMCollator>());
    DataLoader masked(ds, masking, {.batch_size = 3, .num_workers = workers}, sampler);
    auto m = masked.stream(1);
    auto m0 = m->next(), m1 = m->next();
    ASSERT_TRUE(m0 && m1);
    EXPECT_EQ(m0->at("labels").to_vector<int64_t>(),
              CausalLMCollator()
                  .collate({ds->get(order[1]), ds->get(order[3]), ds->get(order[5])})
                  .at("labels")
                  .to_vector<int64_t>());
    const auto labels = m1->at("labels").to_vector<int64_t>();
    ASSERT_FALSE(labels.empty());
    for (int64_t v : labels) EXPECT_EQ(v, kIgnoreIndex);
    EXPECT_EQ(m1->at("input_ids").to_vector<int64_t>()[0], order[0]) << "inputs are kept";
  }
}

// A sampler whose padding flags do not match its indices is refused by name.
TEST(DataLoader, PaddingFlagsOfTheWrongLengthAreAnError) {
  struct BadSampler : Sampler {
    std::vector<int64_t> indices(int64_t) const override { return {0, 1}; }
    int64_t size() const override { return 2; }
    std::vector<bool> padding(int64_t) const override { return {false}; }
  };
  DataLoader loader(std::make_shared<CountingDataset>(2), std::make_shared<PaddingCollator>(),
                    {.batch_size = 2}, std::make_shared<BadSampler>());
  try {
    loader.stream(0);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "[DataLoader] the sampler gave 2 indices and 1 padding flags for epoch 0");
  }
}

// Resuming mid-epoch (transformers#8876): stream(epoch, k) gives the tail of
// the epoch's batches — same examples, same batch numbers for the collator —
// and fetches no example of the skipped ones, with or without workers.
TEST(DataLoader, SkippedBatchesAreNeverFetched) {
  for (int workers : {0, 2}) {
    auto ds = std::make_shared<CountingDataset>(23);
    auto collator = std::make_shared<BatchNumberCollator>();
    DataLoader loader(ds, collator,
                      {.batch_size = 4, .shuffle = true, .seed = 3, .num_workers = workers});
    std::vector<std::vector<int64_t>> all, numbers;
    auto full = loader.stream(2);
    while (auto b = full->next()) all.push_back(b->at("input_ids").to_vector<int64_t>());
    ASSERT_EQ(all.size(), 6u);
    ds->gets = 0;
    auto tail = loader.stream(2, 4);
    std::vector<std::vector<int64_t>> got;
    while (auto b = tail->next()) {
      got.push_back(b->at("input_ids").to_vector<int64_t>());
      numbers.push_back(b->at("batch_index").to_vector<int64_t>());
    }
    EXPECT_EQ(got, std::vector<std::vector<int64_t>>(all.begin() + 4, all.end())) << workers;
    EXPECT_EQ(numbers, (std::vector<std::vector<int64_t>>{{2, 4}, {2, 5}})) << workers;
    EXPECT_EQ(ds->gets.load(), 4 + 3) << "only batches 4 (4 examples) and 5 (3) are fetched";
    ds->gets = 0;
    EXPECT_FALSE(loader.stream(2, 6)->next().has_value());
    EXPECT_FALSE(loader.stream(2, 100)->next().has_value());
    EXPECT_EQ(ds->gets.load(), 0);
  }
  auto ds = std::make_shared<CountingDataset>(4);
  DataLoader loader(ds, std::make_shared<PaddingCollator>(PadOptions{}), {.batch_size = 2});
  try {
    loader.stream(0, -1);
    ADD_FAILURE() << "a negative skip was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("skip_batches must be >= 0, got -1"), std::string::npos)
        << e.what();
  }
}

TEST(DataLoader, RejectsBadOptions) {
  auto ds = std::make_shared<CountingDataset>(3);
  auto collator = std::make_shared<PaddingCollator>();
  EXPECT_THROW(DataLoader(ds, collator, {.batch_size = 0}), Error);
  EXPECT_THROW(DataLoader(ds, nullptr), Error);
  EXPECT_THROW(DataLoader(ds, collator, {.num_workers = -1}), Error);
  // Issue 15: 100000 workers ended in std::terminate once threads ran out.
  try {
    DataLoader(ds, collator, {.num_workers = 100000});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[DataLoader] num_workers must be in [0, 256], got 100000");
  }
  // At the limit, on 3 examples: only as many workers as batches start.
  DataLoader many(ds, collator, {.batch_size = 2, .num_workers = kMaxDataLoaderWorkers});
  EXPECT_EQ(collect(many), collect(DataLoader(ds, collator, {.batch_size = 2})));
  EXPECT_THROW(DataLoader(ds, collator, {.shuffle = true}, std::make_shared<SequentialSampler>(3)),
               Error);
  // A sampler index outside the dataset is reported when its batch is made.
  DataLoader bad(ds, collator, {.batch_size = 2}, std::make_shared<SequentialSampler>(5));
  try {
    collect(bad);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[DataLoader] sampler index 3 is outside the dataset [0, 3)");
  }
}

TEST(DataLoader, WorkerErrorsReachTheCallerWithTheOriginalMessage) {
  auto collator = std::make_shared<PaddingCollator>();
  for (int workers : {0, 1, 3}) {
    auto ds = std::make_shared<CountingDataset>(40);
    ds->throw_at = 13;
    DataLoader loader(ds, collator, {.batch_size = 4, .num_workers = workers});
    int64_t good = 0;
    std::string message;
    auto stream = loader.stream(0);
    try {
      while (stream->next()) ++good;
    } catch (const Error& e) {
      message = e.what();
    }
    EXPECT_EQ(good, 3) << "batches 0..2 arrive before the failing batch 3";
    EXPECT_EQ(message, "[DataLoader] preparing batch 3 failed: disk on fire at 13") << workers;
    EXPECT_FALSE(stream->next().has_value()) << "the epoch ends after an error";
    // A loom::Error passes through unchanged.
    ds->throw_loom_error = true;
    try {
      collect(loader);
      FAIL();
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(), "[my_dataset] record 13 is corrupt");
    }
  }
}

TEST(DataLoader, PrefetchIsBounded) {
  auto ds = std::make_shared<CountingDataset>(400);
  auto collator = std::make_shared<PaddingCollator>();
  DataLoader loader(ds, collator, {.batch_size = 2, .num_workers = 2, .prefetch_factor = 3});
  auto stream = loader.stream(0);
  ASSERT_TRUE(stream->next().has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // At most num_workers * prefetch_factor = 6 batches beyond those consumed
  // (1): 7 batches, 14 examples.
  EXPECT_LE(ds->gets.load(), 14);
  EXPECT_GE(ds->gets.load(), 8) << "workers should have run ahead";
}

TEST(DataLoader, EarlyStopJoinsWorkersPromptly) {
  auto ds = std::make_shared<CountingDataset>(1000);
  ds->delay = std::chrono::milliseconds(20);
  auto collator = std::make_shared<PaddingCollator>();
  DataLoader loader(ds, collator, {.batch_size = 2, .num_workers = 4});
  auto start = Clock::now();
  int seen = 0;
  for (const Batch& b : loader) {
    (void)b;
    if (++seen == 2) break;  // destroys the iterator: stop + join
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  int64_t gets = ds->gets.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(ds->gets.load(), gets) << "no worker may still be running";
  EXPECT_LT(seconds, 2.0) << "1000 examples at 20 ms would take 5 s on 4 workers";
  // A stream dropped before any next() also stops cleanly.
  { auto unused = loader.stream(1); }
}

}  // namespace
}  // namespace loom::data
