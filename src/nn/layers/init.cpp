// Parameter initializers (torch.nn.init subset) and NoInitGuard. Values come
// from loom's global Philox generator on the host and are copied into the
// tensor in place, so they are the same on every device.
#include "loom/error.h"
#include "loom/nn.h"

namespace loom::nn {

namespace {
thread_local int no_init_depth = 0;

void assign(const Tensor& t, const Tensor& host_values) {
  NoGradGuard no_grad;
  Tensor handle = t;
  handle.copy_(host_values);
}
}  // namespace

NoInitGuard::NoInitGuard() { ++no_init_depth; }
NoInitGuard::~NoInitGuard() { --no_init_depth; }
bool NoInitGuard::active() { return no_init_depth > 0; }

void init_normal_(const Tensor& t, double mean, double std) {
  LOOM_CHECK(std >= 0, "[init_normal_] std must be >= 0, got ", std);
  NoGradGuard no_grad;
  assign(t, randn(t.shape()) * std + mean);
}

void init_uniform_(const Tensor& t, double low, double high) {
  LOOM_CHECK(low <= high, "[init_uniform_] low ", low, " > high ", high);
  NoGradGuard no_grad;
  assign(t, rand(t.shape()) * (high - low) + low);
}

void init_constant_(const Tensor& t, double value) {
  NoGradGuard no_grad;
  assign(t, full(t.shape(), value, t.dtype()));
}

}  // namespace loom::nn
