// bench/roofline.h: where a training step stands against this machine's
// limits, measured in the same process on the same threads (issue 24):
// - a GEMM peak: oneDNN's matmul primitive, 2048^3, f32 (and bf16 when the
//   CPU has a native bf16 dot product: oneDNN picks avx512_core_bf16 / AMX),
//   the median of 5 runs after one warm-up;
// - a bandwidth: a STREAM triad a = b + 3c over 3 x 128 MiB (McCalpin's
//   STREAM counts 3 x 8 bytes per element; here floats, so 12), median of 5;
// - the model FLOPs of a Transformer training step, PaLM's count
//   (Chowdhery et al. 2022, appendix B): per token 6N + 12 L T C, N the
//   parameters in matmuls (the LM head included, embedding lookups not), L
//   layers, T the sequence length, C the width; attention counted whole
//   (not halved for causal masking), as PaLM does;
// - with LOOM_KERNEL_TIMES=1 (read by backends/executable.cpp when an
//   executable is compiled; start_roofline sets it first), the time and bytes of the lazy
//   executables' kernels per op
//   ("KernelTime.<op>", "KernelBytes.<op>" in the metrics): the GEMM ops'
//   share and the "time outside GEMMs", and those kernels' bandwidth
//   against the triad.
// Header-only; links oneDNN and OpenMP (the bench targets do).
#pragma once

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <dnnl.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/settings.h"
#include "loom/device.h"
#include "loom/metrics.h"
#include "loom/tensor.h"
#include "step_bench.h"

namespace bench {

struct Peaks {
  double gemm_f32 = 0;   // GFLOP/s
  double gemm_bf16 = 0;  // GFLOP/s; 0 where oneDNN has no bf16 matmul on this CPU
  double triad = 0;      // GB/s
};

namespace roofline_detail {

template <typename F>
double median_seconds(F&& f, int reps = 5) {
  f();  // warm-up: first-touch pages, oneDNN's kernel generation
  std::vector<double> s;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

// GFLOP/s of oneDNN's [n, n] x [n, n] matmul in `dt`, or 0 when oneDNN
// cannot make the primitive (no bf16 on this CPU).
inline double gemm_gflops(dnnl::memory::data_type dt, int threads, int64_t n = 2048) {
  omp_set_num_threads(threads);
  try {
    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(eng);
    dnnl::memory::desc md({n, n}, dt, dnnl::memory::format_tag::ab);
    dnnl::memory::desc out_md({n, n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(md, md, out_md), eng);
    std::string impl = pd.impl_info_str();
    // Only a native bf16 dot product counts (oneDNN emulates bf16 on plain
    // AVX-512): cpu_isa values are bit sets, AMX's contains AVX512-BF16's
    // (as backends/cpu/gemm.cpp's gemm_hardware_native).
    auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
    bool native = dt == dnnl::memory::data_type::f32 ||
                  ((isa & bf16) == bf16 && impl.find("ref") == std::string::npos);
    if (!native) return 0;
    dnnl::matmul prim(pd);
    dnnl::memory a(md, eng), b(md, eng), c(out_md, eng);
    for (dnnl::memory* m : {&a, &b})
      std::fill_n(static_cast<char*>(m->get_data_handle()), md.get_size(), 0x3c);
    double s = median_seconds([&] {
      prim.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
      stream.wait();
    });
    return 2e-9 * double(n) * double(n) * double(n) / s;
  } catch (const dnnl::error&) {
    return 0;
  }
}

inline double triad_gbs(int threads) {
  const int64_t n = int64_t{1} << 25;  // 3 x 128 MiB of floats, far beyond the caches
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  double s = median_seconds([&] {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; ++i) a[i] = b[i] + 3.0f * c[i];
  });
  return 1e-9 * 3.0 * double(n) * sizeof(float) / s;
}

}  // namespace roofline_detail

/// The peaks measure_peaks() measured last (zeros before).
inline Peaks& machine_peaks() {
  static Peaks p;
  return p;
}

/// Measures the peaks on `threads` threads (about 2 s), prints them and
/// keeps them (machine_peaks). `bf16`: also the bf16 GEMM peak.
inline Peaks measure_peaks(int threads, bool bf16) {
  Peaks& p = machine_peaks();
  p.gemm_f32 = roofline_detail::gemm_gflops(dnnl::memory::data_type::f32, threads);
  if (bf16) p.gemm_bf16 = roofline_detail::gemm_gflops(dnnl::memory::data_type::bf16, threads);
  p.triad = roofline_detail::triad_gbs(threads);
  std::printf("machine peaks (%d threads): GEMM f32 %.1f GFLOP/s (oneDNN 2048^3)", threads,
              p.gemm_f32);
  if (bf16) {
    if (p.gemm_bf16 > 0)
      std::printf(", GEMM bf16 %.1f GFLOP/s", p.gemm_bf16);
    else
      std::printf(", GEMM bf16: no native path on this CPU");
  }
  std::printf(", STREAM triad %.1f GB/s\n", p.triad);
  return p;
}

/// What a step bench's main calls first: the kernel times on (unless
/// `kernel_times` is 0, or LOOM_KERNEL_TIMES is already set), then the peaks.
inline void start_roofline(int threads, bool bf16, bool kernel_times) {
  if (kernel_times) {
    setenv("LOOM_KERNEL_TIMES", "1", 0);
    loom::settings::reload();  // settings are cached once read (core/settings.h)
  }
  measure_peaks(threads, bf16);
}

/// The parameters that take part in matmuls: those of two or more dims
/// whose name contains none of `lookups` (embedding tables read by index;
/// a tied head's table is a matmul and is not listed).
inline int64_t matmul_params(const std::vector<std::pair<std::string, loom::Tensor>>& named,
                             const std::vector<std::string>& lookups) {
  int64_t n = 0;
  for (const auto& [name, t] : named) {
    if (t.dim() < 2) continue;
    bool lookup = false;
    for (const std::string& l : lookups) lookup = lookup || name.find(l) != std::string::npos;
    if (!lookup) n += t.numel();
  }
  return n;
}

/// Model FLOPs of one training step (forward + backward) over `tokens`
/// tokens of sequences of `seq`: tokens * (6 N + 12 L T C) (PaLM, app. B).
inline double train_step_flops(int64_t n_matmul, int64_t n_layer, int64_t seq, int64_t width,
                               int64_t tokens) {
  return double(tokens) * (6.0 * double(n_matmul) + 12.0 * double(n_layer * seq * width));
}

/// Per op: kernel nanoseconds and bytes (LOOM_KERNEL_TIMES=1), cumulative.
using KernelTotals = std::map<std::string, std::pair<double, double>>;

/// The "KernelTime.<op>" timers and "KernelBytes.<op>" counters so far;
/// with LOOM_KERNEL_TIMES=2 also the "KernelDetail.<label>" timers, as
/// "detail:<label>" (no bytes).
inline KernelTotals kernel_totals() {
  nlohmann::json j = nlohmann::json::parse(loom::metrics::report_json());
  KernelTotals k;
  const std::string tp = "KernelTime.", bp = "KernelBytes.", dp = "KernelDetail.";
  for (const auto& [name, t] : j["timers"].items()) {
    if (name.rfind(tp, 0) == 0) k[name.substr(tp.size())].first = t.value("total_ns", 0.0);
    if (name.rfind(dp, 0) == 0)
      k["detail:" + name.substr(dp.size())].first = t.value("total_ns", 0.0);
  }
  for (const auto& [name, v] : j["counters"].items())
    if (name.rfind(bp, 0) == 0) k[name.substr(bp.size())].second = v.get<double>();
  return k;
}

/// The ops whose kernels are GEMMs at heart.
inline bool is_gemm_op(const std::string& op) {
  return op == "matmul" || op == "attention" || op == "attention_backward" ||
         op == "fused_linear_cross_entropy";
}

/// Prints the roofline lines of `name`: model FLOPs per step, achieved
/// GFLOP/s and its fraction of `peak` (GFLOP/s, the step's dtype); then,
/// when `after` - `before` holds kernel times (over `steps` steps), the
/// GEMM ops' time per step and their GFLOP/s, the time outside GEMMs with
/// its largest ops, and those kernels' GB/s against the triad.
// `step_ms`: the median step (the headline rate); `mean_ms`: the mean of
// the same steps, against which the kernel times (totals / steps) split.
inline void print_roofline(const std::string& name, double flops, double step_ms, double mean_ms,
                           double peak, const Peaks& peaks, const KernelTotals& before,
                           const KernelTotals& after, int steps) {
  double achieved = flops / (step_ms * 1e6);
  std::printf(
      "roofline (%s): model %.1f GFLOP/step (6N + 12LTC per token), %.1f GFLOP/s = %.1f%% of the "
      "GEMM peak %.1f GFLOP/s\n",
      name.c_str(), flops * 1e-9, achieved, peak > 0 ? 100 * achieved / peak : 0.0, peak);
  std::vector<std::tuple<double, std::string, double>> outside;  // (ms/step, op, bytes/step)
  std::vector<std::pair<double, std::string>> details;           // (ms/step, label)
  double gemm_ms = 0, other_ms = 0, other_bytes = 0;
  for (const auto& [op, v] : after) {
    auto it = before.find(op);
    double ms = (v.first - (it == before.end() ? 0 : it->second.first)) * 1e-6 / steps;
    double bytes = (v.second - (it == before.end() ? 0 : it->second.second)) / steps;
    if (ms <= 0) continue;
    if (op.rfind("detail:", 0) == 0) {
      details.push_back({ms, op.substr(7)});
    } else if (is_gemm_op(op)) {
      gemm_ms += ms;
    } else {
      other_ms += ms, other_bytes += bytes;
      outside.push_back({ms, op, bytes});
    }
  }
  if (gemm_ms + other_ms <= 0) return;
  std::sort(outside.rbegin(), outside.rend());
  double gemm_rate = gemm_ms > 0 ? flops / (gemm_ms * 1e6) : 0;
  double other_rate = other_ms > 0 ? other_bytes / (other_ms * 1e6) : 0;
  std::printf(
      "  kernels (LOOM_KERNEL_TIMES=1), ms per mean step %.1f: GEMM ops %.1f (%.1f GFLOP/s of "
      "model FLOPs = "
      "%.1f%% of peak); outside GEMMs %.1f = other kernels %.1f (%.1f GB/s, %.1f%% of the triad) "
      "+ the rest %.1f (trace, launches, waits)\n  largest kernels outside GEMMs, ms/step (MB "
      "moved/step):",
      mean_ms, gemm_ms, gemm_rate, peak > 0 ? 100 * gemm_rate / peak : 0.0, mean_ms - gemm_ms,
      other_ms, other_rate, peaks.triad > 0 ? 100 * other_rate / peaks.triad : 0.0,
      mean_ms - gemm_ms - other_ms);
  for (size_t i = 0; i < outside.size() && i < 6; ++i)
    std::printf(" %s %.1f (%.0f)", std::get<1>(outside[i]).c_str(), std::get<0>(outside[i]),
                std::get<2>(outside[i]) * 1e-6);
  std::printf("\n");
  // LOOM_KERNEL_TIMES=2: the costliest steps by label (a label's steps summed).
  std::sort(details.rbegin(), details.rend());
  for (size_t i = 0; i < details.size() && i < 30; ++i)
    std::printf("  step %6.2f ms  %s\n", details[i].first, details[i].second.c_str());
}

/// print_roofline for a column on `dev` when it is loom's lazy cpu device
/// (the kernel times are the cpu executables'), against the bf16 GEMM peak
/// when `bf16` and the CPU has one, else the f32 peak.
inline void print_lazy_roofline(const loom::Device& dev, const std::string& name, double flops,
                                const Result& r, bool bf16, const KernelTotals& before, int steps) {
  if (!dev.is_lazy() || dev.backend != "cpu") return;
  const Peaks& p = machine_peaks();
  double peak = bf16 && p.gemm_bf16 > 0 ? p.gemm_bf16 : p.gemm_f32;
  print_roofline(name, flops, r.ms, r.mean_ms, peak, p, before, kernel_totals(), steps);
}

}  // namespace bench
