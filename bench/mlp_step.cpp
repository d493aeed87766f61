// bench/mlp_step: one training step (forward, backward, AdamW with linear
// warm-up) of an MLP, on loom's eager `cpu` device and on the `lazy` device,
// in one run. Prints ms/step (median of --steps after --warmup), the lazy
// compile time, and ratio_lazy_vs_eager = eager ms / lazy ms (> 1: lazy is
// faster).
//   bench_mlp_step --layers 4 --width 1024 --batch 64 --steps 20 --threads 2
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../tests/lazy/lazy_test_util.h"
#include "loom/parallel.h"

namespace {

struct Options {
  int layers = 4, width = 1024, batch = 64, steps = 20, warmup = 3, threads = 2;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    int v = std::atoi(argv[i + 1]);
    if (k == "--layers")
      o.layers = v;
    else if (k == "--width")
      o.width = v;
    else if (k == "--batch")
      o.batch = v;
    else if (k == "--steps")
      o.steps = v;
    else if (k == "--warmup")
      o.warmup = v;
    else if (k == "--threads")
      o.threads = v;
    else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      std::exit(2);
    }
  }
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double run(const Options& o, const loom::Device& dev) {
  using Clock = std::chrono::steady_clock;
  loom::testing::TinyMlp mlp(dev, o.width, o.width, 16, 1, o.layers - 1);
  loom::manual_seed(5);
  loom::Tensor x = loom::randn({o.batch, o.width}).to(dev);
  std::vector<int64_t> labels(o.batch);
  for (int i = 0; i < o.batch; ++i) labels[i] = i % 16;
  loom::Tensor y = loom::tensor_i64(labels, {o.batch}).to(dev);
  std::vector<double> ms;
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    auto t0 = Clock::now();
    mlp.train_step(x, y, s, 1e-4, 10);
    if (dev.is_lazy()) loom::lazy::mark_step();
    loom::lazy::wait();
    (void)mlp.params.back().data();  // the step's results are ready
    double t = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (s >= o.warmup) ms.push_back(t);
  }
  return median(ms);
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  loom::set_num_threads(o.threads);
  std::printf("mlp_step: layers=%d width=%d batch=%d threads=%d steps=%d (median)\n", o.layers,
              o.width, o.batch, o.threads, o.steps);
  double eager = run(o, loom::Device("cpu"));
  std::printf("loom cpu (eager): %.2f ms/step\n", eager);
  loom::metrics::reset();
  double lazy = run(o, loom::Device("lazy"));
  std::printf("loom lazy:        %.2f ms/step\n", lazy);
  std::printf("lazy compile: %.1f ms (%lld uncached, %lld cached)\n",
              loom::metrics::timer_total_ns("CompileTime") / 1e6,
              static_cast<long long>(loom::metrics::counter("UncachedCompile")),
              static_cast<long long>(loom::metrics::counter("CachedCompile")));
  std::printf("ratio_lazy_vs_eager=%.3f\n", eager / lazy);
  return 0;
}
