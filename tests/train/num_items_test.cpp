// The loss over the optimizer step's tokens (transformers' num_items_in_batch,
// issue 37 deliverable 3) on every device: SFT-shaped rows (variable lengths,
// masked prompts, padded to length buckets) trained with gradient
// accumulation 4 x micro-batch 2 give the losses, gradient norms and weights
// of 1 x 8, and the first logged loss is the mean over the 8 rows' target
// tokens (labels != -100 after the shift) computed by hand from one forward.
// SGD without clipping, so a wrong weighting of a micro-batch shows in the
// weights. The two-rank case is tests/cli/sft_dist_cli_test.cpp.
#include <gtest/gtest.h>

#include "common/backends.h"
#include "loom/collator.h"
#include "loom/llama.h"
#include "train/train_test_util.h"

namespace loom {
namespace num_items_test {

std::shared_ptr<LlamaForCausalLM> tiny_qwen3() {
  LlamaConfig c = LlamaConfig::qwen3();
  c.vocab_size = 32;
  c.hidden_size = 16;
  c.intermediate_size = 24;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.max_position_embeddings = 32;
  manual_seed(5);
  return std::make_shared<LlamaForCausalLM>(c);
}

// 8 rows of 3..17 tokens whose first 1..6 labels are masked (a prompt): the
// micro-batches of 2 hold 7 to 24 target tokens.
std::shared_ptr<data::InMemoryDataset> sft_rows() {
  std::vector<data::Example> ex;
  for (int64_t i = 0; i < 8; ++i) {
    data::Example e;
    const int64_t len = 3 + (i * 9) % 15;
    for (int64_t j = 0; j < len; ++j) e.input_ids.push_back((i * 7 + j * 5 + i * j) % 31 + 1);
    e.labels = e.input_ids;
    for (int64_t j = 0; j < 1 + i % 6 && j + 1 < len; ++j) e.labels[static_cast<size_t>(j)] = -100;
    ex.push_back(std::move(e));
  }
  return std::make_shared<data::InMemoryDataset>(std::move(ex));
}

TrainingArguments sgd(const std::string& dir, const std::string& device, int64_t bs, int64_t ga) {
  TrainingArguments a = testing::quiet_args(dir, device);
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

std::shared_ptr<const data::Collator> bucket_collator() {
  data::PadOptions pad;
  pad.strategy = data::PadOptions::Strategy::kBuckets;
  pad.buckets = {4, 8, 16, 32};
  return std::make_shared<data::PaddingCollator>(pad);
}

// Sum over the rows of the token losses / their count, from one eval forward
// of every row alone (no padding at all): the loss of one big batch.
double mean_over_target_tokens(PretrainedModel& m, const data::InMemoryDataset& rows) {
  double total = 0;
  int64_t count = 0;
  for (const data::Example& e : rows.examples()) {
    int64_t n = 0;
    for (size_t j = 1; j < e.labels.size(); ++j) n += e.labels[j] != -100;
    ModelInputs in;
    const auto len = static_cast<int64_t>(e.input_ids.size());
    in.input_ids = tensor_i64(e.input_ids, {1, len});
    in.labels = tensor_i64(e.labels, {1, len});
    total += m.forward(in).loss.item() * static_cast<double>(n);
    count += n;
  }
  return total / static_cast<double>(count);
}

class NumItemsInBatch : public ::testing::TestWithParam<std::string> {};

TEST_P(NumItemsInBatch, AccumulationFourByTwoEqualsOneByEight) {
  LOOM_SKIP_IF_UNAVAILABLE(GetParam());
  testing::reset_lazy_and_wait();
  auto data = sft_rows();
  auto initial = tiny_qwen3();
  initial->eval();
  const double first_loss = mean_over_target_tokens(*initial, *data);
  testing::TempDir d1, d2;
  TrainerOptions o;
  o.data_collator = bucket_collator();
  Trainer big(tiny_qwen3(), sgd(d1.path(), GetParam(), 8, 1), data, nullptr, o);
  Trainer accum(tiny_qwen3(), sgd(d2.path(), GetParam(), 2, 4), data, nullptr, o);
  for (Trainer* t : {&big, &accum}) {
    testing::silence(*t);
    t->train();
  }
  const double tol = std::max(1e-5, testing::device_traits(GetParam()).f32_tol);
  auto lb = testing::logged(big.state(), "loss"), la = testing::logged(accum.state(), "loss");
  auto nb = testing::logged(big.state(), "grad_norm");
  auto na = testing::logged(accum.state(), "grad_norm");
  ASSERT_EQ(lb.size(), 3u);
  ASSERT_EQ(la.size(), 3u);
  EXPECT_NEAR(lb[0].second, first_loss, tol * first_loss);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(la[i].second, lb[i].second, tol * lb[i].second) << "step " << i + 1;
    EXPECT_NEAR(na[i].second, nb[i].second, 10 * tol * nb[i].second) << "step " << i + 1;
  }
  auto pb = testing::snapshot(big.model()), pa = testing::snapshot(accum.model());
  for (const auto& [name, v] : pb)
    for (size_t i = 0; i < v.size(); ++i)
      ASSERT_NEAR(pa.at(name)[i], v[i], tol) << name << "[" << i << "]";
}

std::vector<std::string> num_items_devices() {
  std::vector<std::string> out = {"cpu"};
  for (const std::string& d : testing::lazy_devices(/*models=*/true)) out.push_back(d);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Devices, NumItemsInBatch, ::testing::ValuesIn(num_items_devices()),
                         [](const auto& info) { return testing::device_test_name(info.param); });

}  // namespace num_items_test
}  // namespace loom
