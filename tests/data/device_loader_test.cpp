// Tests of the DeviceLoader (loom/device_loader.h) on the lazy device:
// batches arrive uploaded and in order, one mark_step per batch, worker errors
// re-raised in the caller, clean early stop, bounded prefetch; and the
// compile-count figure of issue 5: 50 batches of lengths 5..64 through a tiny
// LM compile once per distinct padded shape (pad to longest: many; to a
// multiple of 16: <= 4; to a fixed 64: 1) with identical per-example losses.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <set>
#include <stdexcept>
#include <thread>

#include "lazy/lazy_test_util.h"
#include "loom/device_loader.h"
#include "loom/error.h"
#include "loom/ops.h"

namespace loom::data {
namespace {

constexpr int64_t kLoaderVocab = 50, kDim = 16;

// 200 examples with lengths in [5, 64] (the first two are 64 and 5) and ids
// in [1, kLoaderVocab); optionally slow or failing in get().
struct LengthsDataset : Dataset {
  std::vector<Example> examples;
  std::chrono::milliseconds delay{0};
  int64_t throw_at = -1;
  mutable std::atomic<int64_t> gets{0};
  LengthsDataset() {
    uint64_t s = 99;
    auto next = [&] {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      return static_cast<int64_t>(s >> 33);
    };
    for (int i = 0; i < 200; ++i) {
      int64_t len = i == 0 ? 64 : i == 1 ? 5 : 5 + next() % 60;
      Example e;
      for (int64_t t = 0; t < len; ++t) e.input_ids.push_back(1 + next() % (kLoaderVocab - 1));
      examples.push_back(std::move(e));
    }
  }
  int64_t size() const override { return static_cast<int64_t>(examples.size()); }
  Example get(int64_t i) const override {
    ++gets;
    if (delay.count()) std::this_thread::sleep_for(delay);
    if (i == throw_at) throw std::runtime_error("bad example " + std::to_string(i));
    return examples[static_cast<size_t>(i)];
  }
};

// Embedding -> linear -> next-token cross-entropy, one mean loss per example.
struct TinyLm {
  Tensor emb, w, b;
  explicit TinyLm(const Device& dev) {
    manual_seed(11);
    emb = randn({kLoaderVocab, kDim}).to(dev);
    w = (randn({kDim, kLoaderVocab}) * (1.0 / std::sqrt(double(kDim)))).to(dev);
    b = (randn({kLoaderVocab}) * 0.1).to(dev);
  }
  // ids, labels: [B, T] i64 -> B rank-0 losses.
  std::vector<Tensor> losses(const Tensor& ids, const Tensor& labels) const {
    int64_t B = ids.size(0), T = ids.size(1);
    Tensor logits = matmul(embedding(emb, ids), w) + b;  // [B, T, V]
    Tensor pred = slice(logits, 1, 0, T - 1);            // position t predicts t + 1
    Tensor target = slice(labels, 1, 1, T);
    std::vector<Tensor> out;
    for (int64_t r = 0; r < B; ++r)
      out.push_back(cross_entropy(reshape(slice(pred, 0, r, r + 1), {T - 1, kLoaderVocab}),
                                  reshape(slice(target, 0, r, r + 1), {T - 1})));
    return out;
  }
};

class DeviceLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::reset_lazy(); }
};

TEST_F(DeviceLoaderTest, BatchesArriveOnTheDeviceInOrderWithOneMarkStepEach) {
  auto ds = std::make_shared<LengthsDataset>();
  auto collator = std::make_shared<CausalLMCollator>(PadOptions{.pad_to_multiple_of = 16});
  DataLoader loader(ds, collator, {.batch_size = 8, .num_workers = 2});
  DeviceLoader device_loader(loader, Device("lazy"), {.prefetch = 3});
  EXPECT_EQ(device_loader.size(), 25);
  auto host = loader.stream(0);
  int64_t n = 0;
  for (const Batch& b : device_loader) {
    std::optional<Batch> h = host->next();
    ASSERT_TRUE(h.has_value());
    for (const auto& [name, t] : b.tensors()) {
      EXPECT_TRUE(t.device().is_lazy()) << name;
      EXPECT_EQ(t.to(Device("cpu")).to_vector<int64_t>(), h->at(name).to_vector<int64_t>());
    }
    ++n;
  }
  EXPECT_EQ(n, 25);
  EXPECT_FALSE(host->next().has_value());
  EXPECT_EQ(metrics::counter("MarkStep"), 25) << "one per next() after the first, one at the end";
  EXPECT_GT(metrics::counter("InboundData"), 0);

  testing::reset_lazy();
  DeviceLoader quiet(loader, Device("lazy"), {.mark_step = false});
  for (const Batch& b : quiet) (void)b;
  EXPECT_EQ(metrics::counter("MarkStep"), 0);
}

TEST_F(DeviceLoaderTest, WorkerErrorsAreRethrownInTheCaller) {
  auto ds = std::make_shared<LengthsDataset>();
  ds->throw_at = 21;
  auto collator = std::make_shared<CausalLMCollator>(PadOptions{});
  for (int workers : {0, 2}) {
    DeviceLoader dl(DataLoader(ds, collator, {.batch_size = 4, .num_workers = workers}),
                    Device("lazy"));
    int64_t good = 0;
    try {
      for (const Batch& b : dl) {
        (void)b;
        ++good;
      }
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(), "[DataLoader] preparing batch 5 failed: bad example 21");
    }
    EXPECT_EQ(good, 5);
  }
}

TEST_F(DeviceLoaderTest, EarlyStopIsPromptAndPrefetchIsBounded) {
  auto ds = std::make_shared<LengthsDataset>();
  ds->delay = std::chrono::milliseconds(5);
  auto collator = std::make_shared<CausalLMCollator>(PadOptions{});
  DeviceLoader dl(DataLoader(ds, collator, {.batch_size = 4}), Device("lazy"), {.prefetch = 2});
  {
    auto stream = dl.stream(0);
    ASSERT_TRUE(stream->next().has_value());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    // One batch taken, `prefetch` queued: 3 batches of 4 examples read.
    EXPECT_EQ(ds->gets.load(), 12);
  }
  auto start = std::chrono::steady_clock::now();
  for (const Batch& b : dl) {
    (void)b;
    break;
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.0) << "200 examples at 5 ms would take 1 s";
  int64_t gets = ds->gets.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(ds->gets.load(), gets) << "the background thread must be gone";
}

struct PaddedRun {
  std::vector<double> losses;  // per example, in dataset order
  int64_t compiles = 0;
  std::set<int64_t> lengths;  // padded lengths seen
};

PaddedRun run_padded(const TinyLm& model, std::shared_ptr<const Dataset> ds, PadOptions pad) {
  testing::reset_lazy();
  DataLoader loader(std::move(ds), std::make_shared<CausalLMCollator>(pad),
                    {.batch_size = 4, .num_workers = 2});
  DeviceLoader device_loader(loader, Device("lazy"));
  PaddedRun run;
  std::vector<Tensor> pending;
  for (const Batch& b : device_loader) {
    run.lengths.insert(b.at("input_ids").size(1));
    for (Tensor& l : model.losses(b.at("input_ids"), b.at("labels"))) pending.push_back(l);
  }
  run.compiles = metrics::counter("UncachedCompile");
  for (const Tensor& l : pending) run.losses.push_back(l.item());
  EXPECT_EQ(metrics::counter("UncachedCompile"), run.compiles) << "reading must not compile";
  EXPECT_EQ(metrics::counter("EarlySync"), 0);
  return run;
}

TEST_F(DeviceLoaderTest, CompileCountEqualsDistinctPaddedShapes) {
  auto ds = std::make_shared<LengthsDataset>();
  TinyLm model(Device("lazy"));
  using S = PadOptions::Strategy;
  PaddedRun longest = run_padded(model, ds, {});
  PaddedRun multiple = run_padded(model, ds, {.pad_to_multiple_of = 16});
  PaddedRun fixed = run_padded(model, ds, {.strategy = S::kMaxLength, .max_length = 64});

  // The distinct padded lengths, computed on the host from the 50 batches.
  auto expected = [&](const PadOptions& pad) {
    std::set<int64_t> lengths;
    for (size_t start = 0; start < ds->examples.size(); start += 4) {
      int64_t longest_len = 0;
      for (size_t i = start; i < start + 4; ++i)
        longest_len = std::max<int64_t>(longest_len, ds->examples[i].input_ids.size());
      lengths.insert(padded_length(longest_len, pad));
    }
    return lengths;
  };
  EXPECT_EQ(longest.lengths, expected({}));
  EXPECT_EQ(longest.compiles, static_cast<int64_t>(longest.lengths.size()));
  EXPECT_GT(longest.compiles, 10) << "pad to longest: many shapes";
  EXPECT_EQ(multiple.lengths, expected({.pad_to_multiple_of = 16}));
  EXPECT_EQ(multiple.compiles, static_cast<int64_t>(multiple.lengths.size()));
  EXPECT_LE(multiple.compiles, 4);
  EXPECT_EQ(fixed.compiles, 1);
  EXPECT_EQ(fixed.lengths, std::set<int64_t>{64});

  // Padding must not change any example's loss: padded positions carry
  // label -100 and add exact zeros, so the losses are bit-identical.
  ASSERT_EQ(longest.losses.size(), 200u);
  ASSERT_EQ(multiple.losses.size(), 200u);
  ASSERT_EQ(fixed.losses.size(), 200u);
  for (size_t i = 0; i < 200; ++i) {
    ASSERT_TRUE(std::isfinite(longest.losses[i])) << i;
    EXPECT_EQ(multiple.losses[i], longest.losses[i]) << "example " << i;
    EXPECT_EQ(fixed.losses[i], longest.losses[i]) << "example " << i;
  }
  // And the loss is the right one: example 1 (5 tokens) eagerly, unpadded.
  TinyLm eager(Device("cpu"));
  Tensor ids = tensor_i64(ds->examples[1].input_ids, {1, 5});
  double reference = eager.losses(ids, ids)[0].item();
  EXPECT_NEAR(longest.losses[1], reference, 1e-5 * std::abs(reference));
}

}  // namespace
}  // namespace loom::data
