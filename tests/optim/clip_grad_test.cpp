// clip_grad_norm_ against torch.nn.utils.clip_grad_norm_ (tests/fixtures/
// optim/clip.json): the returned total norm and the scaled gradients for L2,
// max-abs and p = 3 norms, clipping and not clipping, on the eager and lazy
// devices; the norm is a rank-0 tensor that stays in the graph (no sync).
#include <gtest/gtest.h>

#include <limits>

#include "loom/error.h"
#include "ops/compare.h"
#include "optim/optim_test_util.h"

namespace loom {
namespace {

using nlohmann::json;
using testing::all_close;
using testing::doubles;

class ClipGrad : public ::testing::TestWithParam<std::string> {};

TEST_P(ClipGrad, MatchesTorch) {
  Device dev(GetParam());
  json fixture = testing::optim_fixture("clip.json");
  ASSERT_EQ(fixture["cases"].size(), 5u);
  for (const json& c : fixture["cases"]) {
    double norm_type = c["norm_type"].is_string() ? std::numeric_limits<double>::infinity()
                                                  : c["norm_type"].get<double>();
    SCOPED_TRACE("max_norm " + std::to_string(c["max_norm"].get<double>()) + " norm_type " +
                 std::to_string(norm_type));
    std::vector<Tensor> params;
    for (size_t i = 0; i < c["shapes"].size(); ++i) {
      Shape shape = c["shapes"][i].get<Shape>();
      Tensor p = zeros(shape).to(dev).requires_grad_();
      p.set_grad(testing::fixture_tensor(c["grads"][i], shape, dev));
      params.push_back(p);
    }
    if (dev.is_lazy()) metrics::reset();
    Tensor total = optim::clip_grad_norm_(params, c["max_norm"].get<double>(), norm_type);
    EXPECT_EQ(total.dim(), 0);
    EXPECT_EQ(total.dtype(), DType::f32);
    EXPECT_EQ(total.device(), dev);
    if (dev.is_lazy()) {
      EXPECT_EQ(metrics::counter("UncachedCompile") + metrics::counter("CachedCompile"), 0)
          << "clip_grad_norm_ must not sync";
      lazy::mark_step();
    }
    EXPECT_NEAR(total.item(), c["total_norm"].get<double>(), 1e-5 * c["total_norm"].get<double>());
    for (size_t i = 0; i < params.size(); ++i)
      EXPECT_TRUE(all_close(params[i].grad(), doubles(c["clipped"][i]), 1e-5, 1e-7)) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, ClipGrad, ::testing::Values("cpu", "lazy"));

TEST(ClipGradNorm, HandComputed) {
  // grads (3, 4) and (12): total sqrt(9 + 16 + 144) = 13; max_norm 6.5 halves them
  // (up to the 1e-6 in torch's denominator).
  Tensor a = zeros({2}).requires_grad_(), b = zeros({1}).requires_grad_();
  Tensor c = zeros({3}).requires_grad_();  // no grad: skipped
  a.set_grad(tensor({3, 4}, {2}));
  b.set_grad(tensor({12}, {1}));
  Tensor total = optim::clip_grad_norm_({a, b, c}, 6.5);
  EXPECT_NEAR(total.item(), 13.0, 1e-6);
  double k = 6.5 / (13.0 + 1e-6);
  testing::expect_close(a.grad(), {3 * k, 4 * k}, 1e-6, 0);
  testing::expect_close(b.grad(), {12 * k}, 1e-6, 0);
  EXPECT_FALSE(c.grad().defined());
  // Under the limit: unchanged (multiplied by exactly 1).
  std::vector<float> before = b.grad().to_vector<float>();
  optim::clip_grad_norm_({a, b}, 100.0);
  EXPECT_EQ(b.grad().to_vector<float>(), before);
}

TEST(ClipGradNorm, EdgeCasesAndErrors) {
  Tensor p = zeros({2}).requires_grad_();
  EXPECT_EQ(optim::clip_grad_norm_({p}, 1.0).item(), 0.0);  // no gradients
  p.set_grad(tensor({1, 1}, {2}));
  EXPECT_THROW(optim::clip_grad_norm_({p}, -1.0), Error);
  EXPECT_THROW(optim::clip_grad_norm_({p}, std::nan("")), Error);
  EXPECT_THROW(optim::clip_grad_norm_({p}, 1.0, 0.0), Error);
  EXPECT_THROW(optim::clip_grad_norm_({Tensor()}, 1.0), Error);
}

}  // namespace
}  // namespace loom
