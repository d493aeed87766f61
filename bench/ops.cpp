// bench/ops — loom's op benchmarks on the eager cpu device (Google
// Benchmark). GEMM at transformer shapes (M = batch*tokens, K/N = hidden
// sizes 768 / 2304 / 3072) through loom::matmul and through oneDNN's matmul
// primitive called directly (same shapes, same thread count, buffers
// allocated once), softmax, layer_norm, gelu, dropout and a chain of five
// elementwise ops, reported as GFLOP/s or GB/s beside this machine's peaks measured in
// the same run (a large oneDNN GEMM; a STREAM-style triad). After the runs a
// summary prints medians (with --benchmark_repetitions), loom/oneDNN ratios
// and fractions of peak.
//
//   ./build/bench_ops --benchmark_repetitions=5 --benchmark_min_time=0.5
//
// Byte counts are the minimal traffic of each op (inputs read once, output
// written once), so GB/s is an effective bandwidth.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstdio>
#include <dnnl.hpp>
#include <map>
#include <string>
#include <vector>

#include "backends/cpu/gemm.h"
#include "loom/ops.h"
#include "loom/parallel.h"
#include "loom/tensor.h"

namespace {

using loom::Tensor;

struct GemmCase {
  int64_t batch, m, k, n;
  bool trans_b;
};

// Linear layers of GPT-2/BERT-base (hidden 768: qkv 2304, mlp 3072) at
// M = B*T tokens; one with nn.Linear's [out, in] weight (trans_b); the
// attention score product per head (batched, trans_b).
const GemmCase kGemmCases[] = {
    {1, 512, 768, 768, false},   {1, 512, 768, 3072, false},  {1, 512, 3072, 768, false},
    {1, 2048, 768, 768, false},  {1, 2048, 768, 2304, false}, {1, 2048, 768, 3072, false},
    {1, 2048, 3072, 768, false}, {1, 4096, 768, 3072, false}, {1, 2048, 768, 3072, true},
    {48, 512, 64, 512, true},
};

std::string gemm_name(const GemmCase& c) {
  std::string s = c.batch > 1 ? std::to_string(c.batch) + "x" : "";
  s += std::to_string(c.m) + "x" + std::to_string(c.k) + "x" + std::to_string(c.n);
  return s + (c.trans_b ? "_tb" : "");
}

double gemm_gflop(const GemmCase& c) { return 2e-9 * double(c.batch * c.m * c.k * c.n); }

void set_rate(benchmark::State& state, const char* name, double per_iteration) {
  state.counters[name] =
      benchmark::Counter(per_iteration, benchmark::Counter::kIsIterationInvariantRate);
}

// ---- Peaks ----

dnnl::memory::desc plain(const dnnl::memory::dims& dims, bool transposed) {
  using dt = dnnl::memory::data_type;
  size_t r = dims.size();
  dnnl::memory::dims strides(r);
  int64_t rows = dims[r - 2], cols = dims[r - 1];
  strides[r - 2] = transposed ? 1 : cols;
  strides[r - 1] = transposed ? rows : 1;
  if (r == 3) strides[0] = rows * cols;
  return dnnl::memory::desc(dims, dt::f32, strides);
}

// oneDNN matmul primitive on preallocated buffers.
void run_onednn(benchmark::State& state, const GemmCase& c) {
  omp_set_num_threads(loom::get_num_threads());
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(eng);
  bool batched = c.batch > 1;
  auto dims = [&](int64_t r, int64_t cc) {
    return batched ? dnnl::memory::dims{c.batch, r, cc} : dnnl::memory::dims{r, cc};
  };
  auto a_md = plain(dims(c.m, c.k), false), b_md = plain(dims(c.k, c.n), c.trans_b);
  auto c_md = plain(dims(c.m, c.n), false);
  dnnl::matmul prim(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), eng));
  dnnl::memory a(a_md, eng), b(b_md, eng), out(c_md, eng);
  for (auto* m : {&a, &b}) {
    float* p = static_cast<float*>(m->get_data_handle());
    size_t n = m->get_desc().get_size() / sizeof(float);
    for (size_t i = 0; i < n; ++i) p[i] = float(i % 17) * 0.01f - 0.08f;
  }
  for (auto _ : state) {
    prim.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, out}});
    stream.wait();
  }
  set_rate(state, "GFLOP/s", gemm_gflop(c));
}

void BM_PeakGemm(benchmark::State& state) { run_onednn(state, {1, 2048, 2048, 2048, false}); }

void BM_PeakTriad(benchmark::State& state) {
  const int64_t n = int64_t{1} << 25;  // 3 x 128 MiB, far beyond the caches
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  int threads = loom::get_num_threads();
  for (auto _ : state) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; ++i) a[i] = b[i] + 3.0f * c[i];
    benchmark::DoNotOptimize(a.data());
  }
  set_rate(state, "GB/s", 1e-9 * 3.0 * n * sizeof(float));
}

// ---- GEMM: loom op vs oneDNN ----

void BM_GemmOneDNN(benchmark::State& state, GemmCase c) { run_onednn(state, c); }

void BM_GemmLoom(benchmark::State& state, GemmCase c) {
  loom::NoGradGuard no_grad;
  loom::manual_seed(1);
  loom::Shape as = {c.m, c.k}, bs = c.trans_b ? loom::Shape{c.n, c.k} : loom::Shape{c.k, c.n};
  if (c.batch > 1) as.insert(as.begin(), c.batch), bs.insert(bs.begin(), c.batch);
  Tensor a = loom::randn(as), b = loom::randn(bs);
  for (auto _ : state) {
    Tensor y = loom::matmul(a, b, false, c.trans_b);
    benchmark::DoNotOptimize(y.data());
  }
  set_rate(state, "GFLOP/s", gemm_gflop(c));
}

// ---- Memory-bound ops ----

constexpr int64_t kRows = 4096, kWide = 3072;

void BM_Softmax(benchmark::State& state) {
  loom::NoGradGuard no_grad;
  Tensor x = loom::randn({8192, 1024});  // e.g. 8 x 12 heads x 8 x 1024 keys
  for (auto _ : state) benchmark::DoNotOptimize(loom::softmax(x, -1).data());
  set_rate(state, "GB/s", 1e-9 * 2.0 * x.numel() * 4);
}

void BM_LayerNorm(benchmark::State& state) {
  loom::NoGradGuard no_grad;
  Tensor x = loom::randn({8192, 768}), w = loom::ones({768}), b = loom::zeros({768});
  for (auto _ : state) benchmark::DoNotOptimize(loom::layer_norm(x, w, b).data());
  set_rate(state, "GB/s", 1e-9 * 2.0 * x.numel() * 4);
}

void BM_Gelu(benchmark::State& state, const char* approximate) {
  loom::NoGradGuard no_grad;
  Tensor x = loom::randn({kRows, kWide});
  for (auto _ : state) benchmark::DoNotOptimize(loom::gelu(x, approximate).data());
  set_rate(state, "GB/s", 1e-9 * 2.0 * x.numel() * 4);
}

void BM_Dropout(benchmark::State& state) {
  loom::NoGradGuard no_grad;
  Tensor x = loom::randn({kRows, kWide});
  for (auto _ : state) benchmark::DoNotOptimize(loom::dropout(x, 0.1).data());
  set_rate(state, "GB/s", 1e-9 * 2.0 * x.numel() * 4);
}

// y = (relu(x * 1.5 + bias) * x) - 0.25: five ops, each a separate kernel.
void BM_Chain5(benchmark::State& state) {
  loom::NoGradGuard no_grad;
  Tensor x = loom::randn({kRows, kWide}), bias = loom::randn({kWide});
  for (auto _ : state) {
    Tensor y = loom::sub(loom::mul(loom::relu(loom::add(loom::mul(x, 1.5), bias)), x), 0.25);
    benchmark::DoNotOptimize(y.data());
  }
  // traffic in elements: 2 (mul) + 2 (add, bias negligible) + 2 (relu) + 3 (mul) + 2 (sub)
  set_rate(state, "GB/s", 1e-9 * 11.0 * x.numel() * 4);
}

// ---- Summary: medians of every benchmark, printed after the console table ----

class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      bool single = r.repetitions <= 1 && r.run_type == Run::RT_Iteration;
      if (!single && r.aggregate_name != "median") continue;
      std::string name =
          r.run_name.function_name + (r.run_name.args.empty() ? "" : "/" + r.run_name.args);
      for (const auto& [key, counter] : r.counters) value_[name][key] = counter.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }

  double get(const std::string& name, const std::string& key) const {
    auto it = value_.find(name);
    if (it == value_.end()) return 0;
    auto c = it->second.find(key);
    return c == it->second.end() ? 0 : c->second;
  }

  void print_summary() const {
    double peak_flops = get("BM_PeakGemm", "GFLOP/s"), peak_bw = get("BM_PeakTriad", "GB/s");
    std::printf("\nSummary (medians), %d threads\n", loom::get_num_threads());
    std::printf("peak GEMM (oneDNN 2048^3 f32): %.1f GFLOP/s; peak bandwidth (triad): %.1f GB/s\n",
                peak_flops, peak_bw);
    std::printf("%-22s %12s %12s %10s %10s\n", "GEMM (BxMxKxN)", "loom GF/s", "oneDNN GF/s",
                "loom/dnnl", "% peak");
    for (const GemmCase& c : kGemmCases) {
      std::string n = gemm_name(c);
      double l = get("BM_GemmLoom/" + n, "GFLOP/s"), d = get("BM_GemmOneDNN/" + n, "GFLOP/s");
      if (l == 0 && d == 0) continue;
      std::printf("%-22s %12.1f %12.1f %10.3f %9.1f%%\n", n.c_str(), l, d, d > 0 ? l / d : 0,
                  peak_flops > 0 ? 100 * l / peak_flops : 0);
    }
    std::printf("%-22s %12s %10s\n", "memory-bound op", "GB/s", "% triad");
    for (const char* n : {"BM_Softmax", "BM_LayerNorm", "BM_Gelu/exact", "BM_Gelu/tanh",
                          "BM_Dropout", "BM_Chain5"}) {
      double g = get(n, "GB/s");
      if (g == 0) continue;
      std::printf("%-22s %12.1f %9.1f%%\n", n, g, peak_bw > 0 ? 100 * g / peak_bw : 0);
    }
  }

 private:
  std::map<std::string, std::map<std::string, double>> value_;
};

void register_all() {
  benchmark::RegisterBenchmark("BM_PeakGemm", BM_PeakGemm)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("BM_PeakTriad", BM_PeakTriad)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  for (const GemmCase& c : kGemmCases) {
    std::string n = gemm_name(c);
    benchmark::RegisterBenchmark(("BM_GemmOneDNN/" + n).c_str(), BM_GemmOneDNN, c)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("BM_GemmLoom/" + n).c_str(), BM_GemmLoom, c)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  benchmark::RegisterBenchmark("BM_Softmax", BM_Softmax)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("BM_LayerNorm", BM_LayerNorm)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("BM_Gelu/exact", BM_Gelu, "none")
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("BM_Gelu/tanh", BM_Gelu, "tanh")
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("BM_Dropout", BM_Dropout)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("BM_Chain5", BM_Chain5)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  register_all();
  benchmark::AddCustomContext("loom_threads", std::to_string(loom::get_num_threads()));
  benchmark::AddCustomContext("bf16_gemm", loom::backends::cpu::gemm_native(loom::DType::bf16)
                                               ? "oneDNN native"
                                               : "via f32 (no native bf16 kernel on this CPU)");
  const dnnl_version_t* v = dnnl_version();
  benchmark::AddCustomContext("onednn", std::to_string(v->major) + "." + std::to_string(v->minor) +
                                            "." + std::to_string(v->patch));
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.print_summary();
  benchmark::Shutdown();
  return 0;
}
