// Helpers for the nn/model tests: paths of the committed fixtures written by
// tools/make_model_fixtures.py, loading a golden.safetensors into tensors,
// comparison that explains a failure (max difference and where, then the
// first values side by side, as DESIGN.md asks), lazy-device resets and
// temporary directories. Self-contained: tests/nn does not depend on other
// test folders.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "common/backends.h"
#include "common/temp_dir.h"
#include "loom/lazy.h"
#include "loom/metrics.h"
#include "loom/models.h"
#include "loom/safetensors.h"
#include "ops/compare.h"

namespace loom::testing {

inline std::string model_fixture(const std::string& name) {
  return std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/models/" + name;
}

/// Every tensor of a safetensors file, on the cpu.
struct Golden {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;
  const Tensor& at(const std::string& name) const {
    auto it = tensors.find(name);
    if (it == tensors.end()) fail("[test] golden has no tensor '", name, "'");
    return it->second;
  }
  bool has(const std::string& name) const { return tensors.count(name) > 0; }
};

inline Golden load_golden(const std::string& path) {
  auto file = safetensors::File::open(path);
  Golden g;
  for (const auto& info : file.tensors())
    g.tensors[info.name] = from_blob(file.data(info).data(), info.shape, info.dtype);
  g.metadata = file.metadata();
  return g;
}

/// |actual - expected| <= rtol * (|expected| + max(max|expected|, 1e-6)):
/// relative to each value and to the tensor's scale, so gradients near zero
/// compare against the size of their neighbours. The 1e-6 floor covers
/// gradients that are exactly zero in real arithmetic (BERT's key biases:
/// softmax ignores a per-row constant), where both sides hold f32 rounding
/// noise around 1e-13.
inline ::testing::AssertionResult close_scaled(const Tensor& actual, const Tensor& expected,
                                               double rtol) {
  if (!actual.defined()) return ::testing::AssertionFailure() << "actual is undefined";
  std::vector<double> e = expected.to_vector<double>();
  double scale = 0;
  for (double v : e) scale = std::max(scale, std::fabs(v));
  scale = std::max(scale, 1e-6);
  return all_close(actual.to(Device("cpu")), expected, rtol, rtol * scale);
}

/// The golden model inputs moved to `device`.
inline ModelInputs golden_inputs(const Golden& g, const Device& device) {
  ModelInputs in;
  in.input_ids = g.at("input_ids").to(device);
  in.attention_mask = g.at("attention_mask").to(device);
  if (g.has("token_type_ids")) in.token_type_ids = g.at("token_type_ids").to(device);
  in.labels = g.at("labels").to(device);
  return in;
}

inline void reset_lazy_state() {
  lazy::mark_step();
  lazy::clear_compile_cache();
  metrics::reset();
}

/// A golden-model test case: a fixture directory of tests/fixtures/models
/// and a device ("cpu" or "lazy").
struct ModelCase {
  std::string model;
  std::string device;
};
inline void PrintTo(const ModelCase& c, std::ostream* os) { *os << c.model << " on " << c.device; }
inline std::string model_case_name(const ::testing::TestParamInfo<ModelCase>& info) {
  std::string name = info.param.model + "_" + info.param.device;
  for (char& ch : name)
    if (ch == ':') ch = '_';
  return name;
}
/// Every fixture model (llama, qwen2, qwen3: tools/make_llama_fixtures.py) on the
/// eager cpu and on the lazy device of every registered backend that runs
/// whole models (common/backends.h: lazy = lazy:cpu, lazy:sim, ...). A test
/// skips a device that cannot run here (LOOM_SKIP_IF_UNAVAILABLE) and
/// compares with transformers at model_tolerance(device).
inline std::vector<ModelCase> all_model_cases() {
  std::vector<std::string> devices = {"cpu"};
  for (const std::string& d : lazy_devices(/*models=*/true)) devices.push_back(d);
  std::vector<ModelCase> out;
  for (const char* model : {"gpt2", "bert", "bert_seqcls", "llama", "qwen2", "qwen3"})
    for (const std::string& device : devices) out.push_back({model, device});
  return out;
}
/// The whole-model tolerance against transformers' fixtures on `device`.
inline double model_tolerance(const std::string& device) { return device_traits(device).model_tol; }
/// The fixture model `model` loaded with from_pretrained on `dev`.
inline std::shared_ptr<PretrainedModel> load_fixture_model(const std::string& model,
                                                           const Device& dev) {
  std::string dir = model_fixture(model);
  if (model == "gpt2") return GPT2LMHeadModel::from_pretrained(dir, dev);
  if (model == "bert") return BertForMaskedLM::from_pretrained(dir, dev);
  if (model == "llama" || model == "qwen2" || model == "qwen3")
    return LlamaForCausalLM::from_pretrained(dir, dev);
  return BertForSequenceClassification::from_pretrained(dir, dev);
}

}  // namespace loom::testing
