// Gradient accumulation on the lazy device (pytorch/xla#1367, #3593): the
// Trainer cuts the graph after every micro-batch, so an accumulation window
// of 4 is 4 graphs, none larger than one micro-batch's training step, and
// the peak of host buffers during training stays that of one micro-batch —
// instead of one graph holding all 4 micro-batches' activations (2,055
// instructions and ~2x the peak memory of one micro-batch before). The
// numbers stay those of one big batch. Graph sizes are read from the
// TensorsGraphSize samples between callbacks, memory from the Buffer
// live/peak counters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "core/buffer.h"
#include "train/train_test_util.h"

namespace loom {
namespace {

// Long sequences make activations outweigh the parameters and their state.
std::shared_ptr<GPT2LMHeadModel> long_context_gpt2(uint64_t seed) {
  GPT2Config c = testing::tiny_gpt2_config();
  c.n_positions = 64;
  manual_seed(seed);
  return std::make_shared<GPT2LMHeadModel>(c);
}

// The graphs synced since the previous substep / step end, from the
// TensorsGraphSize samples (instructions per graph).
struct GraphSizes : TrainerCallback {
  std::vector<int64_t> per_callback_count;  // graphs cut before each callback
  std::vector<int64_t> sizes;               // their instructions, when any were cut
  int64_t last_count = 0, last_total = 0;
  std::string name() const override { return "GraphSizes"; }
  void on_train_begin(const TrainingArguments&, const TrainerState&, TrainerControl&) override {
    last_count = metrics::timer_count("TensorsGraphSize");
    last_total = metrics::timer_total_ns("TensorsGraphSize");
  }
  void record() {
    const int64_t c = metrics::timer_count("TensorsGraphSize");
    const int64_t t = metrics::timer_total_ns("TensorsGraphSize");
    per_callback_count.push_back(c - last_count);
    if (c > last_count) sizes.push_back(t - last_total);
    last_count = c;
    last_total = t;
  }
  void on_substep_end(const TrainingArguments&, const TrainerState&, TrainerControl&) override {
    record();
  }
  void on_step_end(const TrainingArguments&, const TrainerState&, TrainerControl&) override {
    record();
  }
};

struct Measured {
  std::vector<int64_t> per_callback_count, sizes;
  size_t extra_peak = 0;  // peak host buffer bytes during train() beyond those live before
};

Measured train_and_measure(int64_t ga) {
  testing::reset_lazy_and_wait();
  testing::TempDir dir;
  TrainingArguments a = testing::quiet_args(dir.path(), "lazy");
  a.per_device_train_batch_size = 4;
  a.gradient_accumulation_steps = ga;
  a.max_steps = 3;
  a.logging_steps = 1;
  Trainer t(long_context_gpt2(5), a, testing::token_dataset(4 * ga * 3, 64));
  testing::silence(t);
  auto sizes = std::make_shared<GraphSizes>();
  t.add_callback(sizes);
  lazy::mark_step();
  lazy::wait();
  const size_t live_before = Buffer::live_bytes();
  Buffer::reset_peak_bytes();
  t.train();
  lazy::wait();
  return {sizes->per_callback_count, sizes->sizes, Buffer::peak_bytes() - live_before};
}

TEST(GradientAccumulation, OneGraphPerMicroBatchAndTheMemoryOfOne) {
  const Measured one = train_and_measure(1);
  const Measured four = train_and_measure(4);
  ASSERT_EQ(one.per_callback_count, std::vector<int64_t>(3, 1));
  // 3 steps x 4 micro-batches: a graph is cut after each one.
  EXPECT_EQ(four.per_callback_count, std::vector<int64_t>(12, 1));
  ASSERT_FALSE(four.sizes.empty());
  const int64_t one_max = *std::max_element(one.sizes.begin(), one.sizes.end());
  const int64_t four_max = *std::max_element(four.sizes.begin(), four.sizes.end());
  // The last micro-batch's graph adds the accumulation and the window's
  // token count to one step's graph: a few percent, not a factor of 4.
  EXPECT_LE(four_max, one_max + one_max / 10)
      << "largest graph: " << four_max << " instructions with accumulation 4, " << one_max
      << " for one micro-batch";
  EXPECT_GT(one.extra_peak, 0u);
  EXPECT_LE(four.extra_peak, one.extra_peak + one.extra_peak / 5)
      << "peak host bytes during training: " << four.extra_peak << " with accumulation 4, "
      << one.extra_peak << " for one micro-batch";
  std::printf("largest graph %lld / %lld instructions, peak %zu / %zu bytes (GA 4 / GA 1)\n",
              static_cast<long long>(four_max), static_cast<long long>(one_max), four.extra_peak,
              one.extra_peak);
}

// SGD without clipping: the update is the gradient itself, so a wrong
// weighting of the micro-batches shows in the weights.
TrainingArguments sgd_args(const std::string& dir, int64_t bs, int64_t ga) {
  TrainingArguments a = testing::quiet_args(dir, "lazy");
  a.per_device_train_batch_size = bs;
  a.gradient_accumulation_steps = ga;
  a.max_steps = 3;
  a.logging_steps = 1;
  a.optim = "sgd";
  a.learning_rate = 0.5;
  a.max_grad_norm = 0;
  a.lr_scheduler_type = "constant";
  return a;
}

TEST(GradientAccumulation, LazyMicroBatchGraphsEqualOneBigBatch) {
  testing::reset_lazy_and_wait();
  testing::TempDir d1, d2;
  auto data = testing::token_dataset(24, 0, /*varying=*/true);  // 3..8 label tokens each
  Trainer big(testing::tiny_gpt2(3), sgd_args(d1.path(), 8, 1), data);
  Trainer accum(testing::tiny_gpt2(3), sgd_args(d2.path(), 2, 4), data);
  for (Trainer* t : {&big, &accum}) {
    testing::silence(*t);
    t->train();
  }
  auto lb = testing::logged(big.state(), "loss"), la = testing::logged(accum.state(), "loss");
  auto nb = testing::logged(big.state(), "grad_norm");
  auto na = testing::logged(accum.state(), "grad_norm");
  ASSERT_EQ(lb.size(), 3u);
  ASSERT_EQ(la.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(la[i].second, lb[i].second, 1e-5 * lb[i].second) << "step " << i + 1;
    EXPECT_NEAR(na[i].second, nb[i].second, 1e-4 * nb[i].second) << "step " << i + 1;
  }
  auto pb = testing::snapshot(big.model()), pa = testing::snapshot(accum.model());
  for (const auto& [name, v] : pb)
    for (size_t i = 0; i < v.size(); ++i)
      ASSERT_NEAR(pa.at(name)[i], v[i], 1e-5) << name << "[" << i << "]";
}

}  // namespace
}  // namespace loom
