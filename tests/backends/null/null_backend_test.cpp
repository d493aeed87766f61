// The null test backend (null_backend.h), registered from its folder alone:
// the registry lists it and lazy:null is a device; the composite ops it
// lacks are decomposed and run (equal to cpu's results), the ops it has no
// kernel for are refused with a loom::Error naming the op and the backend,
// and its memory is counted.
#include "backends/null/null_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/executable.h"
#include "common/error_of.h"
#include "compiler/program.h"
#include "ir/graph.h"
#include "lazy/dispatch.h"
#include "lazy/lazy_test_util.h"
#include "loom/metrics.h"

namespace loom {
namespace {

const Device kNull("lazy:null");

// Largest |a[i] - b[i]|; a size mismatch counts as infinite.
double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(double(a[i]) - double(b[i])));
  return d;
}

TEST(NullBackend, RegistersItselfFromItsFolder) {
  std::vector<std::string_view> names = backends::backend_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "null"), names.end());
  EXPECT_EQ(&backends::backend_by_name("null"), &testing::null_backend());
  lazy::check_device(kNull);  // a usable lazy device
  EXPECT_NE(std::string(testing::error_of([] {
              backends::register_backend(
                  "null", []() -> const backends::Backend& { return testing::null_backend(); });
            })).find("[backend] register_backend: 'null' is already registered"),
            std::string::npos);
  EXPECT_NE(
      std::string(testing::error_of([] { lazy::check_device(Device("lazy:nul")); })).find("null"),
      std::string::npos)
      << "an unknown backend's error lists the registered ones";
}

TEST(NullBackend, CapabilitiesAreItsKernelTable) {
  backends::Capabilities caps = testing::null_backend().capabilities();
  for (ops::OpKind op : {ops::OpKind::k_add, ops::OpKind::k_exp, ops::OpKind::k_sum,
                         ops::OpKind::k_reshape, ops::OpKind::k_full, ops::OpKind::k_where})
    EXPECT_TRUE(caps.supports(op)) << ops::op_name(op);
  for (ops::OpKind op :
       {ops::OpKind::k_softmax, ops::OpKind::k_layer_norm, ops::OpKind::k_matmul,
        ops::OpKind::k_embedding, ops::OpKind::k_dropout, ops::OpKind::k_all_reduce})
    EXPECT_FALSE(caps.supports(op)) << ops::op_name(op);
}

TEST(NullBackend, DecomposedOpsRunAndEqualCpu) {
  testing::reset_lazy();
  manual_seed(5);
  Tensor x = randn({4, 8}), w = randn({8}), b = randn({8});
  Tensor want_sm = softmax(x), want_ln = layer_norm(x, w, b);
  Tensor got_sm = softmax(x.to(kNull));
  Tensor got_ln = layer_norm(x.to(kNull), w.to(kNull), b.to(kNull));
  lazy::mark_step();
  EXPECT_EQ(metrics::counter("UncachedCompile"), 1);
  EXPECT_LT(max_abs_diff(got_sm.to_vector<float>(), want_sm.to_vector<float>()), 1e-6);
  EXPECT_LT(max_abs_diff(got_ln.to_vector<float>(), want_ln.to_vector<float>()), 1e-5);
  std::vector<float> sm = got_sm.to_vector<float>();
  EXPECT_NEAR(sm[0] + sm[1] + sm[2] + sm[3] + sm[4] + sm[5] + sm[6] + sm[7], 1.0, 1e-6);
}

TEST(NullBackend, RefusedOpsThrowAnErrorNamingOpAndBackend) {
  Tensor a = zeros({2, 3}).to(kNull), b = zeros({3, 2}).to(kNull);
  Tensor c = matmul(a, b);
  std::string e = testing::error_of([&] { c.to_vector<float>(); });
  EXPECT_NE(e.find("[matmul] not supported by backend null"), std::string::npos) << e;
  // Straight through compile(): refused before anything runs.
  ir::Graph g;
  g.inputs = {{{4}, DType::f32}};
  g.instrs.push_back({ops::OpKind::k_relu, {}, {0}, {{4}, DType::f32}});
  g.outputs = {1};
  auto ok = std::make_shared<compiler::Program>(compiler::lower(g, false));
  EXPECT_NE(testing::null_backend().compile(ok), nullptr);
  g.instrs[0].op = ops::OpKind::k_dropout;  // dropout(x, generator): refused
  g.inputs.push_back({{2}, DType::i64});
  g.instrs[0].operands = {0, 1};
  g.outputs = {2};
  auto refused = std::make_shared<compiler::Program>(compiler::lower(g, false));
  e = testing::error_of([&] { testing::null_backend().compile(refused); });
  EXPECT_NE(e.find("[dropout] not supported by backend null"), std::string::npos) << e;
}

TEST(NullBackend, CountsItsMemory) {
  const testing::CountingAllocator& memory = testing::null_backend().memory();
  const size_t before = memory.live_bytes();
  Tensor x = zeros({16, 16}).to(kNull);  // 1024 bytes of f32
  EXPECT_EQ(memory.live_bytes(), before + 1024);
  EXPECT_GE(memory.peak_bytes(), before + 1024);
  Tensor y = exp(x);
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>(256, 1.0f));
  EXPECT_GE(memory.live_bytes(), before + 2048) << "x and y's device data";
  x = Tensor();
  y = Tensor();
  EXPECT_EQ(memory.live_bytes(), before) << "every buffer given back";
}

}  // namespace
}  // namespace loom
