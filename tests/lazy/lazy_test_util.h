// Helpers for the lazy-device tests: a small MLP trained with a hand-written
// AdamW (decoupled weight decay, Loshchilov & Hutter 2019) and linear warm-up,
// written with loom ops so it traces on the lazy device.
#pragma once

#include <cmath>
#include <vector>

#include "loom/lazy.h"
#include "loom/metrics.h"
#include "loom/ops.h"

namespace loom::testing {

struct TinyMlp {
  std::vector<Tensor> params, m, v;
  /// in -> hidden (x hidden_layers) -> out, tanh-GELU between layers.
  TinyMlp(const Device& dev, int64_t in, int64_t hidden, int64_t out, uint64_t seed = 1,
          int hidden_layers = 1) {
    manual_seed(seed);
    std::vector<std::pair<int64_t, int64_t>> dims{{in, hidden}};
    for (int i = 1; i < hidden_layers; ++i) dims.push_back({hidden, hidden});
    dims.push_back({hidden, out});
    for (auto [r, c] : dims) {
      params.push_back((randn({r, c}) * (1.0 / std::sqrt(double(r)))).to(dev).requires_grad_());
      params.push_back(zeros({c}).to(dev).requires_grad_());
    }
    for (const Tensor& p : params) {
      m.push_back(zeros(p.shape()).to(dev));
      v.push_back(zeros(p.shape()).to(dev));
    }
  }
  Tensor loss(const Tensor& x, const Tensor& y) const {
    Tensor h = x;
    for (size_t i = 0; i + 2 < params.size(); i += 2)
      h = gelu(add(matmul(h, params[i]), params[i + 1]), "tanh");
    Tensor logits = add(matmul(h, params[params.size() - 2]), params.back());
    return cross_entropy(logits, y);
  }
  // One AdamW step; lr from a linear warm-up over `warmup` steps.
  void adamw_step(int step, double base_lr, int warmup) {
    NoGradGuard no_grad;
    double lr = base_lr * std::min(1.0, double(step + 1) / warmup);
    double b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.01;
    double c1 = 1 - std::pow(b1, step + 1), c2 = 1 - std::pow(b2, step + 1);
    for (size_t i = 0; i < params.size(); ++i) {
      Tensor& p = params[i];
      Tensor g = p.grad();
      m[i].copy_(m[i] * b1 + g * (1 - b1));
      v[i].copy_(v[i] * b2 + g * g * (1 - b2));
      Tensor update = (m[i] / c1) / (sqrt(v[i] / c2) + eps);
      p.copy_(p * (1 - lr * wd) - update * lr);
      p.zero_grad();
    }
  }
  // One full training step; returns the (lazy) loss.
  Tensor train_step(const Tensor& x, const Tensor& y, int step, double lr = 1e-2, int warmup = 5) {
    Tensor l = loss(x, y);
    l.backward();
    adamw_step(step, lr, warmup);
    return l;
  }
};

inline void reset_lazy() {
  lazy::mark_step();
  lazy::clear_compile_cache();
  metrics::reset();
}

}  // namespace loom::testing
