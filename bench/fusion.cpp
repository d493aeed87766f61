// bench/fusion: what the lazy device's fused elementwise kernel (a chunked
// interpreter) costs against (a) eager, one kernel per op, and (b) one
// hand-written loop — a stand-in for generated code, the best a code
// generator could emit — on the chain y = gelu_tanh(x * a + b) * c - x over
// n floats. Also times compiling such a kernel with the system C++ compiler,
// the per-graph price generated code would pay on a cache miss. Then the
// fused reduction: an elementwise chain and the sum it feeds, reduced over
// rows (sum((x*1.5-0.25)^2, -1) on [n/1024, 1024]) and over columns
// (sum(relu(x*1.5), 0)), eager against lazy; and residual dropout
// (dropout(x*1.5+0.25, 0.1) + x), eager (4 kernels) against lazy (one group).
//   bench_fusion --n 4194304 --reps 20 --threads 2
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numbers>
#include <string>
#include <vector>

#include "loom/lazy.h"
#include "loom/ops.h"
#include "loom/parallel.h"

namespace {
using Clock = std::chrono::steady_clock;

template <typename F>
double median_ms(int reps, F f) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

loom::Tensor chain(const loom::Tensor& x) { return loom::gelu(x * 1.5 + 0.25, "tanh") * 0.5 - x; }

loom::Tensor row_chain(const loom::Tensor& x) {
  loom::Tensor d = x * 1.5 - 0.25;
  return loom::sum(d * d, {-1});
}

loom::Tensor column_chain(const loom::Tensor& x) { return loom::sum(loom::relu(x * 1.5), {0}); }

// Residual dropout as in a transformer block: lazy fuses the dropout (its
// Philox mask regenerated per chunk) with the ops around it.
loom::Tensor dropout_chain(const loom::Tensor& x) { return loom::dropout(x * 1.5 + 0.25, 0.1) + x; }

// Times f eagerly and lazily (after one compiling call) on x [n/1024, 1024].
template <typename F>
void time_eager_lazy(const char* name, const loom::Tensor& x, int reps, F f) {
  double eager = median_ms(reps, [&] { (void)f(x).data(); });
  loom::Tensor xl = x.to("lazy");
  (void)f(xl).data();
  double lazy = median_ms(reps, [&] { (void)f(xl).data(); });
  std::printf("%-12s eager %8.2f ms  lazy fused %8.2f ms  ratio_lazy_vs_eager=%.3f\n", name, eager,
              lazy, eager / lazy);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n = 1 << 22;
  int reps = 20, threads = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--n")
      n = std::atoll(argv[i + 1]);
    else if (k == "--reps")
      reps = std::atoi(argv[i + 1]);
    else if (k == "--threads")
      threads = std::atoi(argv[i + 1]);
  }
  loom::set_num_threads(threads);
  loom::Tensor x = loom::randn({n});
  double eager = median_ms(reps, [&] { (void)chain(x).data(); });
  loom::Tensor xl = x.to("lazy");
  (void)chain(xl).data();  // compile once
  double lazy = median_ms(reps, [&] { (void)chain(xl).data(); });
  std::vector<float> in = x.to_vector<float>(), out(n);
  const float k = static_cast<float>(std::sqrt(2.0 / std::numbers::pi));
  double hand = median_ms(reps, [&] {
#pragma omp parallel for
    for (int64_t i = 0; i < n; ++i) {
      float v = in[i] * 1.5f + 0.25f;
      float g = 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
      out[i] = g * 0.5f - in[i];
    }
  });
  double gb = 2.0 * n * 4 / 1e9;  // one read + one write
  std::printf("fusion: n=%lld threads=%d reps=%d (median)\n", static_cast<long long>(n), threads,
              reps);
  std::printf("eager (6 kernels):        %8.2f ms  %6.2f GB/s effective\n", eager,
              gb / eager * 1e3);
  std::printf("lazy fused interpreter:   %8.2f ms  %6.2f GB/s effective\n", lazy, gb / lazy * 1e3);
  std::printf("hand-fused loop:          %8.2f ms  %6.2f GB/s effective\n", hand, gb / hand * 1e3);
  std::printf("ratio_interpreter_vs_hand=%.3f\n", hand / lazy);
  std::printf("ratio_lazy_vs_eager=%.3f\n", eager / lazy);
  // Compile cost of one generated kernel of this size with the system compiler.
  std::string dir = "/tmp/loom_fusion_bench";
  std::system(("mkdir -p " + dir).c_str());
  std::ofstream(dir + "/k.cpp")
      << "#include <cmath>\nextern \"C\" void k(const float* x, float* y, long n) {\n"
         "#pragma omp parallel for\n for (long i = 0; i < n; ++i) { float v = x[i]*1.5f+0.25f;"
         " float g = 0.5f*v*(1.0f+std::tanh(0.7978845608f*(v+0.044715f*v*v*v)));"
         " y[i] = g*0.5f - x[i]; }\n}\n";
  double cc = median_ms(3, [&] {
    std::system(
        ("c++ -O3 -march=native -fopenmp -shared -fPIC " + dir + "/k.cpp -o " + dir + "/k.so")
            .c_str());
  });
  std::printf("generated-code compile (c++ -O3, one kernel): %.0f ms\n", cc);
  loom::Tensor x2 = loom::reshape(x, {n / 1024, 1024});
  time_eager_lazy("row sum", x2, reps, row_chain);
  time_eager_lazy("column sum", x2, reps, column_chain);
  time_eager_lazy("dropout", x2, reps, dropout_chain);
  return 0;
}
