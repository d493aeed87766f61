// Helpers for the Trainer tests: a tiny GPT-2 (vocab 32, 2 layers, width 16),
// synthetic token datasets (fixed or varying lengths), quiet TrainingArguments
// (no progress output), a temporary directory, and snapshots of a model's
// parameters for bitwise comparison. Self-contained: tests/train depends on no
// other test folder.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/temp_dir.h"
#include "loom/gpt2.h"
#include "loom/lazy.h"
#include "loom/metrics.h"
#include "loom/trainer.h"

namespace loom::testing {

/// A 2-layer GPT-2 small enough for many training runs per second.
inline GPT2Config tiny_gpt2_config(double dropout = 0.0) {
  GPT2Config c;
  c.vocab_size = 32;
  c.n_positions = 16;
  c.n_embd = 16;
  c.n_layer = 2;
  c.n_head = 2;
  c.resid_pdrop = c.embd_pdrop = c.attn_pdrop = dropout;
  return c;
}

inline std::shared_ptr<GPT2LMHeadModel> tiny_gpt2(uint64_t init_seed, double dropout = 0.0) {
  manual_seed(init_seed);
  return std::make_shared<GPT2LMHeadModel>(tiny_gpt2_config(dropout));
}

/// `n` examples with labels = input_ids; example i has `length` tokens, or
/// (varying) 3 + (i * 5) % 6 tokens, so micro-batches hold different numbers
/// of label tokens.
inline std::shared_ptr<data::InMemoryDataset> token_dataset(int64_t n, int64_t length = 8,
                                                            bool varying = false) {
  std::vector<data::Example> ex;
  for (int64_t i = 0; i < n; ++i) {
    data::Example e;
    const int64_t len = varying ? 3 + (i * 5) % 6 : length;
    for (int64_t j = 0; j < len; ++j) e.input_ids.push_back((i * 7 + j * 3 + (i * j) % 5) % 32);
    e.labels = e.input_ids;
    ex.push_back(std::move(e));
  }
  return std::make_shared<data::InMemoryDataset>(std::move(ex));
}

/// Arguments with no console output, in `dir`, on `device`.
inline TrainingArguments quiet_args(const std::string& dir, const std::string& device = "cpu") {
  TrainingArguments a;
  a.output_dir = dir;
  a.device = Device(device);
  a.disable_tqdm = true;
  a.learning_rate = 1e-2;
  a.save_strategy = "no";
  return a;
}

/// Removes the printer so tests stay quiet.
inline void silence(Trainer& t) { t.remove_callback("PrinterCallback"); }

/// Every parameter's f32 values by name (host copies).
inline std::map<std::string, std::vector<float>> snapshot(const nn::Module& m) {
  std::map<std::string, std::vector<float>> out;
  for (const auto& [name, p] : m.named_parameters())
    out[name] = p.to(Device("cpu")).to_vector<float>();
  return out;
}

/// Asserts two snapshots are bitwise equal, naming the first differing value.
inline void expect_bitwise_equal(const std::map<std::string, std::vector<float>>& a,
                                 const std::map<std::string, std::vector<float>>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, va] : a) {
    const auto& vb = b.at(name);
    ASSERT_EQ(va.size(), vb.size()) << name;
    for (size_t i = 0; i < va.size(); ++i) {
      if (std::memcmp(&va[i], &vb[i], sizeof(float)) != 0) {
        ADD_FAILURE() << name << "[" << i << "]: " << va[i] << " vs " << vb[i];
        return;
      }
    }
  }
}

/// The log_history entries holding `key`, as (step, value).
inline std::vector<std::pair<int64_t, double>> logged(const TrainerState& s,
                                                      const std::string& key) {
  std::vector<std::pair<int64_t, double>> out;
  for (const Logs& e : s.log_history)
    if (auto it = e.find(key); it != e.end())
      out.emplace_back(static_cast<int64_t>(e.at("step")), it->second);
  return out;
}

/// Names of the checkpoint-N directories in `dir`, by N (listed independently
/// of the Trainer's own helpers).
inline std::vector<std::string> checkpoint_names(const std::string& dir) {
  std::vector<std::pair<long, std::string>> found;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::string n = e.path().filename().string();
    if (e.is_directory() && n.rfind("checkpoint-", 0) == 0)
      found.emplace_back(std::stol(n.substr(11)), n);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& [k, n] : found) out.push_back(n);
  return out;
}

// Flushes and waits for pending lazy work, then clears the compile cache and
// the metrics (named apart from lazy_test_util.h's reset_lazy, which does
// not wait: one name with two bodies would be an ODR violation).
inline void reset_lazy_and_wait() {
  lazy::mark_step();
  lazy::wait();
  lazy::clear_compile_cache();
  metrics::reset();
}

}  // namespace loom::testing
