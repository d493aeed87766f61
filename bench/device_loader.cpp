// bench/device_loader: does the DeviceLoader hide input time behind compute?
// A small LM (embedding -> linear -> GELU -> linear -> cross-entropy, SGD) is
// trained on the lazy device from a deliberately slow dataset (get() sleeps,
// standing in for disk/network/tokenization). Four timings, ms/step (median
// of --steps after --warmup, over --rounds interleaved rounds):
//   compute      the training step alone, batches already on the device
//   input        the DataLoader alone (no training)
//   sequential   for b in DataLoader: upload, train, mark_step, read the loss
//   device_loader for b in DeviceLoader: train (mark_step in next()), read the
//                previous step's loss (PyTorch/XLA's pattern)
// Without overlap a step costs compute + input; with the DeviceLoader it
// should cost about max(compute, input). Prints both, and
// ratio_vs_max = device_loader / max (1.0 is perfect overlap) and
// speedup = sequential / device_loader.
//   bench_device_loader --steps 20 --rounds 3 --input_ms 0 --threads 2
// --input_ms 0 (default) sets the input time per batch equal to the measured
// compute time, where overlap matters most (sum = 2 x max).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "loom/device_loader.h"
#include "loom/lazy.h"
#include "loom/metrics.h"
#include "loom/ops.h"
#include "loom/parallel.h"

namespace {

using Clock = std::chrono::steady_clock;
using loom::Tensor;
namespace data = loom::data;

struct Options {
  int steps = 20, warmup = 2, rounds = 3, batch = 8, seq = 64, vocab = 512, dim = 128;
  int hidden = 256;
  int threads = 2;
  double input_ms = 0;  // per batch; 0: equal to the measured compute time
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    double v = std::atof(argv[i + 1]);
    if (k == "--steps")
      o.steps = static_cast<int>(v);
    else if (k == "--warmup")
      o.warmup = static_cast<int>(v);
    else if (k == "--batch")
      o.batch = static_cast<int>(v);
    else if (k == "--seq")
      o.seq = static_cast<int>(v);
    else if (k == "--hidden")
      o.hidden = static_cast<int>(v);
    else if (k == "--threads")
      o.threads = static_cast<int>(v);
    else if (k == "--input_ms")
      o.input_ms = v;
    else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      std::exit(2);
    }
  }
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// Fixed-length token sequences; get() sleeps `delay_us`.
struct SlowDataset : data::Dataset {
  int64_t n, seq, vocab;
  int64_t delay_us = 0;
  SlowDataset(int64_t n, int64_t seq, int64_t vocab) : n(n), seq(seq), vocab(vocab) {}
  int64_t size() const override { return n; }
  data::Example get(int64_t i) const override {
    if (delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
    data::Example e;
    for (int64_t t = 0; t < seq; ++t) e.input_ids.push_back((i * 31 + t * 7) % vocab);
    return e;
  }
};

struct Lm {
  std::vector<Tensor> params;
  int64_t vocab;
  Lm(const Options& o, const loom::Device& dev) : vocab(o.vocab) {
    loom::manual_seed(3);
    auto init = [&](loom::Shape s, double scale) {
      params.push_back((loom::randn(s) * scale).to(dev).requires_grad_());
    };
    init({o.vocab, o.dim}, 1.0);
    init({o.dim, o.hidden}, 1.0 / std::sqrt(double(o.dim)));
    init({o.hidden, o.vocab}, 1.0 / std::sqrt(double(o.hidden)));
  }
  // One SGD step on a batch; returns the (pending) mean loss.
  Tensor step(const data::Batch& b) {
    const Tensor& ids = b.at("input_ids");
    int64_t T = ids.size(1);
    Tensor h = loom::gelu(loom::matmul(loom::embedding(params[0], ids), params[1]), "tanh");
    Tensor logits = loom::matmul(h, params[2]);  // [B, T, V]
    Tensor pred = loom::reshape(loom::slice(logits, 1, 0, T - 1), {-1, vocab});
    Tensor target = loom::reshape(loom::slice(b.at("labels"), 1, 1, T), {-1});
    Tensor loss = loom::cross_entropy(pred, target);
    loss.backward();
    loom::NoGradGuard no_grad;
    for (Tensor& p : params) {
      p.copy_(p - p.grad() * 0.05);
      p.zero_grad();
    }
    return loss;
  }
};

// Step times after the first `warmup` steps of a pass, appended to `ms`.
struct Timing {
  Timing(int warmup, std::vector<double>& ms) : warmup(warmup), ms(ms) {}
  int warmup;
  std::vector<double>& ms;
  Clock::time_point last = Clock::now();
  int seen = 0;
  void tick() {
    auto now = Clock::now();
    if (seen++ >= warmup)
      ms.push_back(std::chrono::duration<double, std::milli>(now - last).count());
    last = now;
  }
};

void time_compute(const Options& o, Lm& lm, const data::Batch& host, std::vector<double>& ms) {
  data::Batch on_device = host.to(loom::Device("lazy"));
  Timing t(o.warmup, ms);
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    Tensor loss = lm.step(on_device);
    loom::lazy::mark_step();
    (void)loss.item();
    t.tick();
  }
}

void time_input(const Options& o, const data::DataLoader& loader, std::vector<double>& ms) {
  Timing t(o.warmup, ms);
  for (const data::Batch& b : loader) {
    (void)b;
    t.tick();
  }
}

void time_sequential(const Options& o, Lm& lm, const data::DataLoader& loader,
                     std::vector<double>& ms) {
  Timing t(o.warmup, ms);
  for (const data::Batch& b : loader) {
    Tensor loss = lm.step(b.to(loom::Device("lazy")));
    loom::lazy::mark_step();
    (void)loss.item();
    t.tick();
  }
}

void time_device_loader(const Options& o, Lm& lm, const data::DataLoader& loader,
                        std::vector<double>& ms) {
  data::DeviceLoader device_loader(loader, loom::Device("lazy"), {.prefetch = 2});
  Timing t(o.warmup, ms);
  Tensor previous;
  for (const data::Batch& b : device_loader) {
    if (previous.defined()) (void)previous.item();  // launched by next()'s mark_step
    previous = lm.step(b);
    t.tick();
  }
  if (previous.defined()) (void)previous.item();
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  loom::set_num_threads(o.threads);
  const int64_t batches = o.warmup + o.steps;
  auto ds = std::make_shared<SlowDataset>(batches * o.batch, o.seq, o.vocab);
  auto collator = std::make_shared<data::CausalLMCollator>(data::PadOptions{});
  data::DataLoader loader(ds, collator, {.batch_size = o.batch});
  Lm lm(o, loom::Device("lazy"));

  // Calibrate: the step alone, then the input time per batch.
  data::Batch first = loader.stream(0)->next().value();  // no delay yet
  std::vector<double> compute_ms, input_ms, sequential_ms, overlapped_ms;
  time_compute(o, lm, first, compute_ms);
  double per_batch_ms = o.input_ms > 0 ? o.input_ms : median(compute_ms);
  ds->delay_us = static_cast<int64_t>(per_batch_ms * 1000.0 / o.batch);
  compute_ms.clear();
  // Interleave the four passes round by round so that a change in machine
  // load hits all of them alike; report medians over every round's steps.
  for (int round = 0; round < o.rounds; ++round) {
    time_compute(o, lm, first, compute_ms);
    time_input(o, loader, input_ms);
    time_sequential(o, lm, loader, sequential_ms);
    time_device_loader(o, lm, loader, overlapped_ms);
  }
  double compute = median(compute_ms), input = median(input_ms);
  double sequential = median(sequential_ms), overlapped = median(overlapped_ms);

  std::printf(
      "device_loader: batch=%d seq=%d vocab=%d dim=%d hidden=%d threads=%d steps=%d x %d rounds "
      "(median ms/step)\n",
      o.batch, o.seq, o.vocab, o.dim, o.hidden, o.threads, o.steps, o.rounds);
  std::printf("compute only:            %8.2f ms/step\n", compute);
  std::printf("input only:              %8.2f ms/step (dataset sleeps %lld us per example)\n",
              input, static_cast<long long>(ds->delay_us));
  std::printf("sum (compute + input):   %8.2f ms/step\n", compute + input);
  std::printf("max (compute, input):    %8.2f ms/step\n", std::max(compute, input));
  std::printf("sequential loop:         %8.2f ms/step\n", sequential);
  std::printf("DeviceLoader loop:       %8.2f ms/step\n", overlapped);
  std::printf("ratio_vs_max = %.3f  (DeviceLoader / max; 1.0 = perfect overlap)\n",
              overlapped / std::max(compute, input));
  std::printf("ratio_vs_sum = %.3f  (DeviceLoader / sum; 0.5 = perfect when equal)\n",
              overlapped / (compute + input));
  std::printf("speedup = %.2fx  (sequential / DeviceLoader)\n", sequential / overlapped);
  std::printf("compiles: %lld\n",
              static_cast<long long>(loom::metrics::counter("UncachedCompile")));
  return 0;
}
