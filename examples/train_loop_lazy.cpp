// examples/train_loop_lazy.cpp: a training loop written by hand against
// loom's tensor API, as one writes it for PyTorch/XLA: parameters as leaf
// tensors on the lazy device, a forward pass of plain ops, loss.backward(),
// AdamW, and lazy::mark_step() at the end of each step, which compiles the
// step's graph once and replays it from the compile cache afterwards. At the
// end it writes a checkpoint (the weights as model.safetensors, the optimizer
// state as optimizer.safetensors), reads the weights back and checks them.
//
// The task: fit a 2-layer MLP (4 -> 32 -> 1, tanh) to y = sin(x0) + x1 * x2 - x3
// on 256 random points. No files are read.
//
//   build/example_train_loop_lazy [steps (default 300)] [checkpoint_dir (default out/train_loop)]
//
// Prints the loss every 50 steps, the number of graphs compiled, and
// "checkpoint ok: ..." after the round trip; exits 1 when the loss did not
// fall to a tenth of its start or the weights read back differ.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "loom/device.h"
#include "loom/error.h"
#include "loom/lazy.h"
#include "loom/metrics.h"
#include "loom/ops.h"
#include "loom/optim.h"
#include "loom/safetensors.h"
#include "loom/tensor.h"

namespace {

struct Mlp {
  loom::Tensor w1, b1, w2, b2;  // [4,32], [32], [32,1], [1]
  std::vector<loom::Tensor> parameters() const { return {w1, b1, w2, b2}; }
  loom::Tensor forward(const loom::Tensor& x) const {
    loom::Tensor h = loom::tanh(loom::matmul(x, w1) + b1);
    return loom::matmul(h, w2) + b2;
  }
};

// Kaiming-uniform-like init on the cpu, then moved to `device` as trainable leaves.
Mlp make_mlp(const loom::Device& device) {
  auto param = [&](const loom::Shape& shape, double scale) {
    loom::Tensor t = loom::mul(loom::sub(loom::rand(shape), 0.5), 2 * scale);
    return t.to(device).requires_grad_();
  };
  return {param({4, 32}, 0.5), param({32}, 0.1), param({32, 1}, 0.18), param({1}, 0.1)};
}

// y = sin(x0) + x1 * x2 - x3 for x uniform in [-1, 1)^4, on the cpu.
void make_data(int64_t n, loom::Tensor& x, loom::Tensor& y) {
  x = loom::mul(loom::sub(loom::rand({n, 4}), 0.5), 2.0);
  std::vector<float> xs = x.to_vector<float>(), ys(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const float* r = &xs[static_cast<size_t>(i * 4)];
    ys[static_cast<size_t>(i)] = std::sin(r[0]) + r[1] * r[2] - r[3];
  }
  y = loom::tensor(ys, {n, 1});
}

// The checkpoint: every parameter (cpu copies) in one safetensors file.
void save_weights(const Mlp& mlp, const std::string& path) {
  const char* names[] = {"w1", "b1", "w2", "b2"};
  std::vector<loom::Tensor> host;
  std::vector<loom::safetensors::TensorRef> refs;
  for (const loom::Tensor& p : mlp.parameters()) host.push_back(p.detach().to(loom::Device("cpu")));
  for (size_t i = 0; i < host.size(); ++i)
    refs.push_back({names[i], host[i].dtype(), host[i].shape(), host[i].data()});
  loom::safetensors::save(path, refs, {{"format", "pt"}});
}

// Largest |difference| between w1 in memory and w1 in the file.
double reload_difference(const Mlp& mlp, const std::string& path) {
  loom::safetensors::File file = loom::safetensors::File::open(path);
  const loom::safetensors::TensorInfo& info = file.at("w1");
  std::vector<float> saved(static_cast<size_t>(loom::numel(info.shape)));
  std::memcpy(saved.data(), file.data(info).data(), saved.size() * sizeof(float));
  std::vector<float> live = mlp.w1.to(loom::Device("cpu")).to_vector<float>();
  double worst = 0;
  for (size_t i = 0; i < saved.size(); ++i)
    worst = std::max(worst, static_cast<double>(std::fabs(saved[i] - live[i])));
  return worst;
}

int run(int steps, const std::string& dir) {
  loom::manual_seed(0);
  loom::Device lazy("lazy");
  Mlp mlp = make_mlp(lazy);
  loom::Tensor x_host, y_host;
  make_data(256, x_host, y_host);
  loom::Tensor x = x_host.to(lazy), y = y_host.to(lazy);
  loom::optim::AdamW opt(mlp.parameters(), {.lr = 1e-2, .weight_decay = 0.0});

  double first = 0, last = 0;
  for (int step = 0; step < steps; ++step) {
    loom::Tensor diff = mlp.forward(x) - y;
    loom::Tensor loss = loom::mean(diff * diff);
    loss.backward();
    opt.step();
    opt.zero_grad();
    loom::lazy::mark_step();  // one graph: forward, backward and the AdamW update
    if (step == 0 || step % 50 == 49 || step == steps - 1) {
      last = loss.item();  // a host read: the step's result, already computed
      if (step == 0) first = last;
      std::printf("step %4d  loss %.5f\n", step + 1, last);
    }
  }
  std::printf("graphs compiled: %lld\n",
              static_cast<long long>(loom::metrics::counter("UncachedCompile")));

  std::filesystem::create_directories(dir);
  const std::string weights = dir + "/model.safetensors";
  save_weights(mlp, weights);
  opt.save(dir + "/optimizer.safetensors");
  const double worst = reload_difference(mlp, weights);
  if (worst != 0 || !(last < first / 10)) {
    std::fprintf(stderr, "train_loop_lazy: loss %g -> %g, reload diff %g\n", first, last, worst);
    return 1;
  }
  std::printf("checkpoint ok: %s (w1 read back, max |diff| %g)\n", weights.c_str(), worst);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    int steps = argc > 1 ? std::atoi(argv[1]) : 300;
    std::string dir = argc > 2 ? argv[2] : "out/train_loop";
    if (steps < 1) throw loom::Error("steps must be >= 1");
    return run(steps, dir);
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
