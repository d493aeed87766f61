// Helpers for the optimizer tests: reading the JSON fixtures written by
// tools/make_optim_fixtures.py (torch.optim / transformers values) and
// building tensors from them on a given device. Header-only (tests only).
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/lazy.h"
#include "loom/metrics.h"
#include "loom/ops.h"
#include "loom/optim.h"

namespace loom::testing {

/// tests/fixtures/optim/<name>, parsed. Fails the test (fatal) when missing.
inline nlohmann::json optim_fixture(const std::string& name) {
  std::string path = std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/optim/" + name;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "missing fixture " << path
                         << " (regenerate: python3 tools/make_optim_fixtures.py)";
  std::stringstream buf;
  buf << in.rdbuf();
  return nlohmann::json::parse(buf.str());
}

inline std::vector<double> doubles(const nlohmann::json& values) {
  return values.get<std::vector<double>>();
}

/// An f32 tensor from JSON values and shape, on `device`.
inline Tensor fixture_tensor(const nlohmann::json& values, const Shape& shape,
                             const Device& device) {
  std::vector<float> v;
  for (double x : doubles(values)) v.push_back(static_cast<float>(x));
  return tensor(v, shape).to(device);
}

/// Syncs the lazy device (no-op for eager devices).
inline void sync_if_lazy(const Device& device) {
  if (device.is_lazy()) lazy::mark_step();
}

}  // namespace loom::testing
