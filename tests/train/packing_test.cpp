// Packing, padding-free (issue 37, deliverable 4; data/sft/sft_packing.h):
//  - bfd_bins against hand-checked cases of TRL's _pack_bfd (best fit, the
//    first-in bin among equal spaces, a stable descending sort), and
//    pack_bfd / pack_wrapped against rows TRL's pack_dataset wrote
//    (tests/fixtures/sft/packing.json, tools/make_packing_fixtures.py);
//  - pack_bfd / pack_wrapped rows and PaddingFreeCollator's layout
//    (positions restarting, the first label of each sequence -100, padding
//    as position-0 tokens, data-parallel repeats without labels);
//  - attention with the packed-sequence mask (models::packed_sequence_mask)
//    equals each sequence's attention alone, forward and gradients, on the
//    eager devices and every lazy backend, against the reference backend;
//  - a tiny Qwen3 and GPT-2: packed per-sequence logits and losses equal the
//    unpacked ones (1e-5) on every backend.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/backends.h"
#include "data/sft/sft_packing.h"
#include "loom/gpt2.h"
#include "loom/llama.h"
#include "loom/ops.h"
#include "nn/models/init_weights.h"
#include "train/train_test_util.h"

namespace loom {
namespace packing_test {

using Bins = std::vector<std::vector<size_t>>;

TEST(SftPackingBins, BestFitDecreasingHandCheckedCases) {
  // Sorted 7,5,4,3,2,1: 7 -> A (1 left), 5 -> B (3), 4 -> C (4), 3 -> B
  // (the least space that holds it: 3, not C's 4), 2 -> C, 1 -> A.
  EXPECT_EQ(data::bfd_bins({5, 3, 7, 2, 4, 1}, 8), (Bins{{2, 5}, {0, 1}, {4, 3}}));
  // Equal lengths keep their order (stable sort); equal spaces go first in, first out.
  EXPECT_EQ(data::bfd_bins({4, 4, 4, 4}, 8), (Bins{{0, 1}, {2, 3}}));
  EXPECT_EQ(data::bfd_bins({6, 6, 2, 2}, 8), (Bins{{0, 2}, {1, 3}}));
  // A full bin takes nothing more; an item of the whole capacity opens its own.
  EXPECT_EQ(data::bfd_bins({8, 1, 8}, 8), (Bins{{0}, {2}, {1}}));
  EXPECT_EQ(data::bfd_bins({}, 4), Bins{});
  EXPECT_THROW(data::bfd_bins({3, 9}, 8), Error);
  EXPECT_THROW(data::bfd_bins({3}, 0), Error);
}

// tests/fixtures/sft/packing.json (tools/make_packing_fixtures.py, TRL's
// pack_dataset): sequence i is the id i repeated; each packed row's
// sequences, their lengths after the cut, and (wrapped) the rows' ids.
TEST(SftPackingBins, RowsEqualTrlPackDataset) {
  std::ifstream in(std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/sft/packing.json");
  ASSERT_TRUE(in) << "tests/fixtures/sft/packing.json";
  const nlohmann::json fixture = nlohmann::json::parse(in);
  for (const nlohmann::json& c : fixture.at("cases")) {
    const auto lengths = c.at("lengths").get<std::vector<int64_t>>();
    const int64_t capacity = c.at("capacity").get<int64_t>();
    std::vector<data::Example> ex;
    for (size_t i = 0; i < lengths.size(); ++i) {
      data::Example e;
      e.input_ids.assign(static_cast<size_t>(lengths[i]), static_cast<int64_t>(i));
      e.labels = e.input_ids;
      ex.push_back(std::move(e));
    }
    const bool bfd = c.at("strategy") == "bfd";
    const std::string what = c.at("strategy").get<std::string>() + " capacity " +
                             std::to_string(capacity) + ", " + std::to_string(lengths.size()) +
                             " sequences";
    std::vector<data::Example> rows =
        bfd ? data::pack_bfd(ex, capacity) : data::pack_wrapped(ex, capacity);
    ASSERT_EQ(rows.size(), c.at("rows").size()) << what;
    for (size_t r = 0; r < rows.size(); ++r) {
      const nlohmann::json& want = c.at("rows")[r];
      if (!bfd) {
        EXPECT_EQ(rows[r].input_ids, want.at("input_ids").get<std::vector<int64_t>>()) << what;
        continue;
      }
      std::vector<int64_t> sequences, runs;
      for (size_t t = 0; t < rows[r].input_ids.size(); ++t) {
        if (t == 0 || rows[r].attention_mask[t] != rows[r].attention_mask[t - 1]) {
          sequences.push_back(rows[r].input_ids[t]);
          runs.push_back(0);
        }
        ++runs.back();
      }
      EXPECT_EQ(sequences, want.at("sequences").get<std::vector<int64_t>>())
          << what << " row " << r;
      EXPECT_EQ(runs, want.at("lengths").get<std::vector<int64_t>>()) << what << " row " << r;
    }
  }
}

data::Example seq(std::vector<int64_t> ids, std::vector<int64_t> labels) {
  data::Example e;
  e.input_ids = std::move(ids);
  e.labels = std::move(labels);
  return e;
}

std::vector<int64_t> column(const data::Batch& b, const std::string& name) {
  return b.at(name).to_vector<int64_t>();
}

TEST(SftPackingRows, BfdRowsAndThePaddingFreeBatch) {
  const std::vector<data::Example> ex = {seq({1, 2, 3}, {-100, 2, 3}), seq({4, 5}, {4, 5}),
                                         seq({6, 7, 8, 9, 10, 11}, {6, 7, 8, 9, 10, 11})};
  // max_length 5: the 6-token example is cut to 5 (TRL's list_slice), then
  // bins: 5 -> A, 3 -> B, 2 -> B.
  std::vector<data::Example> rows = data::pack_bfd(ex, 5);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].input_ids, (std::vector<int64_t>{6, 7, 8, 9, 10}));
  EXPECT_EQ(rows[1].input_ids, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(rows[1].labels, (std::vector<int64_t>{-100, 2, 3, 4, 5}));
  EXPECT_EQ(rows[1].attention_mask, (std::vector<int64_t>{1, 1, 1, 2, 2}));

  data::PaddingFreeCollator rowwise({.pad_id = 0, .flatten = false, .buckets = {6}});
  data::Batch b = rowwise.collate({rows[1], rows[0]});
  EXPECT_FALSE(b.contains("attention_mask"));
  EXPECT_EQ(b.at("input_ids").shape(), (Shape{2, 6}));
  EXPECT_EQ(column(b, "input_ids"), (std::vector<int64_t>{1, 2, 3, 4, 5, 0, 6, 7, 8, 9, 10, 0}));
  EXPECT_EQ(column(b, "position_ids"), (std::vector<int64_t>{0, 1, 2, 0, 1, 0, 0, 1, 2, 3, 4, 0}));
  // The first label of every sequence is -100: no prediction across a boundary.
  EXPECT_EQ(column(b, "labels"),
            (std::vector<int64_t>{-100, 2, 3, -100, 5, -100, -100, 7, 8, 9, 10, -100}));

  // --padding_free: the batch in one row, padded to the bucket; a data-parallel
  // repeat (context.padding) keeps its tokens but loses its labels.
  data::PaddingFreeCollator flat({.pad_id = 9, .flatten = true, .buckets = {4, 8}});
  data::CollateContext ctx;
  ctx.padding = {false, true};
  data::Batch f = flat.collate({ex[0], ex[1]}, ctx);
  EXPECT_EQ(f.at("input_ids").shape(), (Shape{1, 8}));
  EXPECT_EQ(column(f, "input_ids"), (std::vector<int64_t>{1, 2, 3, 4, 5, 9, 9, 9}));
  EXPECT_EQ(column(f, "position_ids"), (std::vector<int64_t>{0, 1, 2, 0, 1, 0, 0, 0}));
  EXPECT_EQ(column(f, "labels"), (std::vector<int64_t>{-100, 2, 3, -100, -100, -100, -100, -100}));
  EXPECT_THROW(flat.collate({ex[2], ex[2]}), Error);  // 12 tokens, largest bucket 8
}

TEST(SftPackingRows, WrappedCutsTheConcatenation) {
  std::vector<data::Example> rows =
      data::pack_wrapped({seq({1, 2, 3}, {1, 2, 3}), seq({4, 5, 6, 7}, {-100, 5, 6, 7})}, 3);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].input_ids, (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(rows[1].labels, (std::vector<int64_t>{-100, 5, 6}));
  EXPECT_EQ(rows[2].input_ids, (std::vector<int64_t>{7}));
  EXPECT_TRUE(rows[2].attention_mask.empty());
}

// ---- Attention over packed sequences. ----

// Deterministic values in [-1, 1).
std::vector<float> wave(size_t n, float phase) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(0.37f * static_cast<float>(i) + phase);
  return v;
}

struct AttentionResult {
  std::vector<float> out, dq, dk, dv;
};

// Causal attention of q, k, v [1, H, T, D] (k, v with hkv heads) under
// `mask`, and the gradients of sum(out * w).
AttentionResult attend(const std::vector<float>& qv, const std::vector<float>& kv,
                       const std::vector<float>& vv, const std::vector<float>& wv, int64_t h,
                       int64_t hkv, int64_t t, int64_t d, const Tensor& mask_host,
                       const Device& dev) {
  Tensor q = tensor(qv, {1, h, t, d}, dev).requires_grad_();
  Tensor k = tensor(kv, {1, hkv, t, d}, dev).requires_grad_();
  Tensor v = tensor(vv, {1, hkv, t, d}, dev).requires_grad_();
  Tensor mask = mask_host.defined() ? mask_host.to(dev) : Tensor();
  Tensor out = scaled_dot_product_attention(q, k, v, mask, /*causal=*/true);
  Tensor w = tensor(wv, {1, h, t, d}, dev);
  sum(out * w).backward();
  return {out.to_vector<float>(), q.grad().to_vector<float>(), k.grad().to_vector<float>(),
          v.grad().to_vector<float>()};
}

// Rows [t0, t0 + n) of every head of a [H, T, D] host array.
std::vector<float> rows_of(const std::vector<float>& x, int64_t heads, int64_t t, int64_t d,
                           int64_t t0, int64_t n) {
  std::vector<float> out;
  for (int64_t hh = 0; hh < heads; ++hh)
    for (int64_t i = t0; i < t0 + n; ++i)
      for (int64_t c = 0; c < d; ++c) out.push_back(x[static_cast<size_t>((hh * t + i) * d + c)]);
  return out;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, double tol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::fabs(got[i] - want[i]) > worst) worst = std::fabs(got[i] - want[i]), at = i;
  EXPECT_LE(worst, tol) << what << ": max |diff| " << worst << " at " << at << " (got " << got[at]
                        << ", want " << want[at] << ")";
}

class PackedAttention : public ::testing::TestWithParam<std::string> {};

// Three sequences (5, 40, 3 tokens: the 40 spans two of the cpu kernel's
// 32-row blocks) and 2 padding tokens in one row of 50, GQA 4 q heads on 2
// kv heads: each sequence's rows of the packed output and gradients equal
// that sequence attended alone on the reference backend.
TEST_P(PackedAttention, EqualsEachSequenceAlone) {
  LOOM_SKIP_IF_UNAVAILABLE(GetParam());
  const Device dev(GetParam());
  const int64_t h = 4, hkv = 2, d = 8;
  const std::vector<int64_t> lens = {5, 40, 3, 1, 1};  // the last two: padding (position 0 each)
  int64_t t = 0;
  std::vector<int64_t> pos;
  for (int64_t n : lens) {
    for (int64_t i = 0; i < n; ++i) pos.push_back(i);
    t += n;
  }
  const auto q = wave(static_cast<size_t>(h * t * d), 0.0f);
  const auto k = wave(static_cast<size_t>(hkv * t * d), 1.0f);
  const auto v = wave(static_cast<size_t>(hkv * t * d), 2.0f);
  const auto w = wave(static_cast<size_t>(h * t * d), 0.5f);
  const Tensor mask = models::packed_sequence_mask(tensor_i64(pos, {1, t}), t);
  ASSERT_EQ(mask.shape(), (Shape{1, 1, t, t}));
  const AttentionResult packed = attend(q, k, v, w, h, hkv, t, d, mask, dev);
  const double tol = testing::device_traits(GetParam()).f32_tol * 10;
  int64_t t0 = 0;
  for (int64_t n : lens) {
    auto cut = [&](const std::vector<float>& x, int64_t heads) {
      return rows_of(x, heads, t, d, t0, n);
    };
    const AttentionResult alone = attend(cut(q, h), cut(k, hkv), cut(v, hkv), cut(w, h), h, hkv, n,
                                         d, Tensor(), Device("cpu:reference"));
    const std::string at = GetParam() + ", sequence at " + std::to_string(t0);
    expect_near(cut(packed.out, h), alone.out, tol, "out " + at);
    expect_near(cut(packed.dq, h), alone.dq, tol, "dq " + at);
    expect_near(cut(packed.dk, hkv), alone.dk, tol, "dk " + at);
    expect_near(cut(packed.dv, hkv), alone.dv, tol, "dv " + at);
    t0 += n;
  }
}

std::vector<std::string> attention_devices() {
  std::vector<std::string> out = {"cpu", "cpu:reference"};
  for (const std::string& d : testing::lazy_devices()) out.push_back(d);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Devices, PackedAttention, ::testing::ValuesIn(attention_devices()),
                         [](const auto& info) { return testing::device_test_name(info.param); });

// ---- Whole models: packed per-sequence losses equal the unpacked ones. ----

std::shared_ptr<PretrainedModel> tiny_model(const std::string& kind) {
  manual_seed(11);
  if (kind == "gpt2") {
    GPT2Config c = testing::tiny_gpt2_config();
    c.n_positions = 32;
    return std::make_shared<GPT2LMHeadModel>(c);
  }
  LlamaConfig c = LlamaConfig::qwen3();
  c.vocab_size = 32;
  c.hidden_size = 16;
  c.intermediate_size = 24;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.max_position_embeddings = 32;
  return std::make_shared<LlamaForCausalLM>(c);
}

// Sum and count of the token losses of one forward (the model's mean x count).
double summed_loss(PretrainedModel& m, const data::Batch& b, const Device& dev, int64_t& count) {
  ModelInputs in;
  in.input_ids = b.at("input_ids").to(dev);
  in.labels = b.at("labels").to(dev);
  if (b.contains("position_ids")) in.position_ids = b.at("position_ids").to(dev);
  if (b.contains("attention_mask")) in.attention_mask = b.at("attention_mask").to(dev);
  const double mean = m.forward(in).loss.item();
  const std::vector<int64_t> labels = b.at("labels").to_vector<int64_t>();
  const int64_t row = b.at("labels").size(1);
  count = 0;
  for (size_t i = 0; i < labels.size(); ++i) count += labels[i] != -100 && i % row != 0;
  return mean * static_cast<double>(count);
}

class PackedLoss : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

// Nine sequences of 3..14 tokens, some with masked prompts, packed by BFD into
// rows of 16: each sequence's summed loss from its own unpacked forward, added
// up, equals the packed rows' summed loss, and the label counts agree.
TEST_P(PackedLoss, PackedSumsEqualUnpackedSums) {
  const auto& [kind, device] = GetParam();
  LOOM_SKIP_IF_UNAVAILABLE(device);
  const Device dev(device);
  std::vector<data::Example> ex;
  for (int64_t i = 0; i < 9; ++i) {
    data::Example e;
    const int64_t len = 3 + (i * 7) % 12;
    for (int64_t j = 0; j < len; ++j) e.input_ids.push_back((i * 5 + j * 3 + i * j) % 31 + 1);
    e.labels = e.input_ids;
    for (int64_t j = 0; j < i % 3 && j + 1 < len; ++j) e.labels[static_cast<size_t>(j)] = -100;
    ex.push_back(std::move(e));
  }
  std::shared_ptr<PretrainedModel> model = tiny_model(kind);
  model->to(dev);
  model->eval();
  double want = 0;
  int64_t want_count = 0;
  data::PaddingCollator plain;
  for (const data::Example& e : ex) {
    int64_t n = 0;
    want += summed_loss(*model, plain.collate({e}), dev, n);
    want_count += n;
  }
  std::vector<data::Example> rows = data::pack_bfd(ex, 16);
  ASSERT_LT(rows.size(), ex.size());
  data::PaddingFreeCollator packed({.pad_id = 0, .flatten = false, .buckets = {16}});
  int64_t got_count = 0;
  const double got = summed_loss(*model, packed.collate(rows), dev, got_count);
  EXPECT_EQ(got_count, want_count);
  EXPECT_NEAR(got, want, 1e-5 * std::fabs(want)) << kind << " on " << device;
  // --padding_free: all nine in one row.
  data::PaddingFreeCollator flat({.pad_id = 0, .flatten = true, .buckets = {128}});
  const double flat_sum = summed_loss(*model, flat.collate(ex), dev, got_count);
  EXPECT_EQ(got_count, want_count);
  EXPECT_NEAR(flat_sum, want, 1e-5 * std::fabs(want)) << kind << " on " << device;
}

std::vector<std::tuple<std::string, std::string>> loss_params() {
  std::vector<std::tuple<std::string, std::string>> out;
  std::vector<std::string> devices = {"cpu"};
  for (const std::string& d : testing::lazy_devices(/*models=*/true)) devices.push_back(d);
  for (const char* kind : {"qwen3", "gpt2"})
    for (const std::string& d : devices) out.emplace_back(kind, d);
  return out;
}

INSTANTIATE_TEST_SUITE_P(ModelsAndDevices, PackedLoss, ::testing::ValuesIn(loss_params()),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" +
                                  testing::device_test_name(std::get<1>(info.param));
                         });

}  // namespace packing_test
}  // namespace loom
