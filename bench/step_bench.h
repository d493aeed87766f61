// bench/step_bench.h: what the training-step benchmarks (gpt2_step,
// bert_step) share: integer flags, process CPU time, minor page faults, peak
// RSS (VmHWM, resettable), the result table and running a Python peer with
// its best set-up in its own process (OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE
// and loom's GOMP_SPINCOUNT default (loom/omp_env.h) unset,
// OMP_WAIT_POLICY=PASSIVE, OMP_NUM_THREADS = MKL_NUM_THREADS = --threads).
// A peer prints any lines it likes (echoed with "  peer| ") and ends with one
// JSON line: median_ms, median_cpu_ms, first_step_ms, median_minor_faults,
// peak_rss_mb, loss_first, loss_last, torch (or library), note. The JAX peers
// run on $LOOM_PEER_PYTHON (python3), the PyTorch/XLA ones on torch_xla's own
// venv (torch_xla_python()). Header-only; Linux (/proc/self).
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "loom/autocast.h"
#include "loom/metrics.h"

namespace bench {

using Clock = std::chrono::steady_clock;

/// --name value flags, all integers except `dropout`.
struct Options {
  std::map<std::string, int> ints;
  double dropout = 0.1;
  int get(const std::string& k) const { return ints.at(k); }
};

/// Parses argv over the defaults in `o`; exits 2 with a message on a bad flag.
inline Options parse(int argc, char** argv, Options o, const char* prog) {
  for (int i = 1; i < argc; i += 2) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0 || i + 1 >= argc) {
      std::fprintf(stderr, "usage: %s [--flag value]... (bad argument %s)\n", prog, k.c_str());
      std::exit(2);
    }
    k = k.substr(2);
    if (k == "dropout") {
      o.dropout = std::atof(argv[i + 1]);
    } else if (o.ints.count(k)) {
      o.ints[k] = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "%s: unknown flag --%s\n", prog, k.c_str());
      std::exit(2);
    }
  }
  if (o.get("steps") < 1 || o.get("warmup") < 0 || o.get("threads") < 1) {
    std::fprintf(stderr, "--steps must be >= 1, --warmup >= 0, --threads >= 1\n");
    std::exit(2);
  }
  return o;
}

inline double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return 1e3 * static_cast<double>(ts.tv_sec) + 1e-6 * static_cast<double>(ts.tv_nsec);
}

/// Minor page faults of the process so far (each maps a fresh page).
inline double minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_minflt);
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

/// Peak resident set (VmHWM) in MiB since the last reset_peak_rss().
inline double peak_rss_mb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  return 0.0;
}
inline void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

/// The largest arena_bytes (intermediates) of the executables in the lazy
/// metrics since their last reset (lazy_metrics.json "executables").
inline double max_arena_bytes() {
  nlohmann::json j = nlohmann::json::parse(loom::metrics::report_json());
  double best = 0;
  for (const auto& [key, e] : j["executables"].items())
    best = std::max(best, e.value("arena_bytes", 0.0));
  return best;
}

/// Whether a --bf16 run takes the autocast path on `dev` (loom/autocast.h
/// choose_autocast, as the Trainer's --bf16): prints the decision's line
/// once per device when bf16 was requested.
inline bool autocast_on(bool requested, const loom::Device& dev) {
  bool native = requested && loom::autocast_native(dev, loom::DType::bf16);
  loom::AutocastChoice c = loom::choose_autocast(requested, loom::DType::bf16, native);
  static std::string said;
  if (requested && said != dev.str()) {
    std::printf("%s: %s\n", dev.str().c_str(), c.message.c_str());
    said = dev.str();
  }
  return c.enabled;
}

/// One column of the result table.
struct Result {
  std::string name;
  double ms = 0, cpu_ms = 0, first_ms = 0, rss_mb = 0, loss_first = 0, loss_last = 0;
  double mean_ms = 0;  // the mean of the timed steps (the roofline's kernel split is per mean step)
  double faults = 0;   // minor page faults per step (median)
  std::string note;
};

/// Collects per-step times of one column (wall, CPU, faults) after warm-up.
struct StepTimer {
  std::vector<double> wall, cpu, faults;
  Clock::time_point t0;
  double c0 = 0, f0 = 0;
  void start() { t0 = Clock::now(), c0 = process_cpu_ms(), f0 = minor_faults(); }
  double elapsed_ms() const {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  }
  void record(double ms) {
    wall.push_back(ms);
    cpu.push_back(process_cpu_ms() - c0);
    faults.push_back(minor_faults() - f0);
  }
  void finish(Result& r) const {
    r.ms = median(wall), r.cpu_ms = median(cpu), r.faults = median(faults);
    r.mean_ms = wall.empty() ? 0.0 : std::accumulate(wall.begin(), wall.end(), 0.0) / wall.size();
    r.rss_mb = peak_rss_mb();
  }
};

/// The repository root: $LOOM_SOURCE_DIR, else the one CMake built from.
inline std::string repo_root() {
  if (const char* env = std::getenv("LOOM_SOURCE_DIR")) return env;
#ifdef LOOM_SOURCE_DIR
  return LOOM_SOURCE_DIR;
#else
  return std::filesystem::path(__FILE__).parent_path().parent_path().string();
#endif
}

/// "openmp wait: ..." — the OpenMP spin setting loom's process runs with.
inline std::string omp_wait_line() {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  std::string line = "openmp wait (loom): ";
  if (policy) line += std::string("OMP_WAIT_POLICY=") + policy + " ";
  if (spin) line += std::string("GOMP_SPINCOUNT=") + spin + " ";
  if (!policy && !spin) line += "libgomp default (spin 300000) ";
  if (std::getenv("LOOM_OMP_ENV_APPLIED")) line += "(set by loom)";
  return line;
}

/// Runs `<python> bench/<script> <args>` with the peer set-up for `threads`;
/// echoes its lines and returns its result named `name`, or nullopt (with a
/// message) when it fails or torch is missing.
inline std::optional<Result> run_peer(const std::string& script, const std::string& args,
                                      int threads, const std::string& name,
                                      const std::string& python = "python3") {
  const std::string n = std::to_string(threads);
  std::string cmd =
      "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE -u GOMP_SPINCOUNT -u LOOM_OMP_ENV_APPLIED "
      "OMP_WAIT_POLICY=PASSIVE "
      "OMP_NUM_THREADS=" +
      n + " MKL_NUM_THREADS=" + n + " '" + python + "' '" + repo_root() + "/bench/" + script +
      "' " + args + " 2>&1";
  std::fflush(stdout);
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string line, last_json;
  char buf[4096];
  while (fgets(buf, sizeof(buf), pipe) != nullptr) {
    line = buf;
    if (!line.empty() && line[0] == '{')
      last_json = line;
    else
      std::printf("  peer| %s", line.c_str());
  }
  std::fflush(stdout);
  int status = pclose(pipe);
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  nlohmann::json j = nlohmann::json::parse(last_json, nullptr, /*allow_exceptions=*/false);
  if (code != 0 || j.is_discarded() || !j.contains("median_ms")) {
    std::printf(
        "peer (%s) skipped: exit code %d (needs %s with torch and transformers;"
        " scripts/setup_peers.sh installs them)\n",
        name.c_str(), code, python.c_str());
    return std::nullopt;
  }
  Result r;
  r.name = name;
  r.ms = j["median_ms"];
  r.cpu_ms = j["median_cpu_ms"];
  r.first_ms = j["first_step_ms"];
  r.faults = j["median_minor_faults"];
  r.rss_mb = j["peak_rss_mb"];
  r.loss_first = j["loss_first"];
  r.loss_last = j["loss_last"];
  // A peer names its library ("jax 0.10"); the PyTorch peers give "torch".
  std::string library = j.value("library", "torch " + j.value("torch", std::string("?")));
  r.note = library + ", " + j.value("note", std::string());
  return r;
}

/// The interpreter of the JAX peers: $LOOM_PEER_PYTHON, else python3.
inline std::string peer_python() {
  const char* py = std::getenv("LOOM_PEER_PYTHON");
  return py && *py ? py : "python3";
}

/// The interpreter of the PyTorch/XLA peers (--mode xla): $LOOM_TORCH_XLA_PYTHON,
/// else the project's own virtual environment <repo>/.venv-torch-xla/bin/python
/// (scripts/setup_peers.sh makes it: torch_xla with the torch it is pinned to,
/// apart from python3's torch). Empty, after the line "peer (<name>) skipped:
/// ...", when that interpreter is missing.
inline std::string torch_xla_python(const std::string& name) {
  const char* env = std::getenv("LOOM_TORCH_XLA_PYTHON");
  std::string py = env && *env ? env : repo_root() + "/.venv-torch-xla/bin/python";
  bool on_path = py.find('/') == std::string::npos;  // a bare name: PATH finds it
  if (!on_path && !std::filesystem::exists(py)) {
    std::printf("peer (%s) skipped: %s not found (torch_xla's venv; run scripts/setup_peers.sh)\n",
                name.c_str(), py.c_str());
    return "";
  }
  return py;
}

/// Prints the table; `items_per_step` turns ms into items/s (`unit`).
inline void print_table(const std::vector<Result>& rs, double items_per_step, const char* unit) {
  std::printf("\n%-22s %10s %12s %9s %13s %11s %13s  %s\n", "implementation", "ms/step",
              "CPU ms/step", unit, "first step ms", "peak RSS MB", "faults/step",
              "loss first -> last");
  for (const Result& r : rs) {
    double rate = r.ms > 0 ? 1e3 * items_per_step / r.ms : 0.0;
    std::printf("%-22s %10.1f %12.1f %9.1f %13.1f %11.0f %13.0f  %.4f -> %.4f  %s\n",
                r.name.c_str(), r.ms, r.cpu_ms, rate, r.first_ms, r.rss_mb, r.faults, r.loss_first,
                r.loss_last, r.note.c_str());
  }
}

/// The median of a timer's samples in ms, leaving out the first `skip`
/// (warm-up: the first steps compile); -1 without samples.
inline double timer_median_ms(const std::string& name, size_t skip = 0) {
  std::vector<int64_t> s = loom::metrics::timer_samples(name);
  if (s.size() <= skip) return -1.0;
  s.erase(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(skip));
  std::sort(s.begin(), s.end());
  return static_cast<double>(s[s.size() / 2]) / 1e6;
}

/// "<name> host: HostTime ..." (lazy/host_time.h): the host's trace + graph
/// key + launch per step, against the device's ExecuteTime, medians over the
/// steps after `warmup` (each step waits for its results, so the executor's
/// idle time per step is the host's time: the device waits in this loop).
inline void print_host_time(const std::string& name, int warmup) {
  size_t skip = static_cast<size_t>(std::max(0, warmup));
  std::printf(
      "%s host: HostTime %.2f ms/step (median of %lld), ExecuteTime %.2f ms/step (median)\n",
      name.c_str(), timer_median_ms("HostTime", skip),
      static_cast<long long>(loom::metrics::timer_count("HostTime")) - static_cast<long long>(skip),
      timer_median_ms("ExecuteTime", skip));
}

/// The comparison every step bench runs: loom eager (with --loom_eager) and
/// lazy through `run_loom(device, name)`, lazy's compile metrics, the peer's
/// eager (with --peer) and torch.compile (with --compile) through
/// `run_peer(mode)`, then the table and the lazy-vs-peer ratios.
/// `extra` (optional) appends more columns after the lazy one (gpt2_step:
/// lazy:xla; both: the JAX peer and the PyTorch/XLA peer).
template <typename RunLoom, typename RunPeer>
int run_comparison(const Options& o, RunLoom run_loom, RunPeer run_peer, double items_per_step,
                   const char* unit,
                   const std::function<void(std::vector<Result>&)>& extra = nullptr) {
  std::string suffix = o.get("bf16") ? " bf16" : "";
  std::vector<Result> rs;
  if (o.get("loom_eager")) rs.push_back(run_loom(loom::Device("cpu"), "loom cpu (eager)" + suffix));
  loom::metrics::reset();
  Result lazy = run_loom(loom::Device("lazy"), "loom lazy" + suffix);
  rs.push_back(lazy);
  std::printf(
      "loom lazy compile: CompileTime %.1f ms (UncachedCompile %lld, CachedCompile %lld), "
      "ExecuteTime %.1f ms over %lld executions\n",
      loom::metrics::timer_total_ns("CompileTime") / 1e6,
      static_cast<long long>(loom::metrics::counter("UncachedCompile")),
      static_cast<long long>(loom::metrics::counter("CachedCompile")),
      loom::metrics::timer_total_ns("ExecuteTime") / 1e6,
      static_cast<long long>(loom::metrics::timer_count("ExecuteTime")));
  print_host_time("loom lazy", o.get("warmup"));
  if (extra) extra(rs);
  std::optional<Result> torch_eager, torch_compile;
  if (o.get("peer")) torch_eager = run_peer("eager");
  if (torch_eager && o.get("compile")) torch_compile = run_peer("compile");
  if (torch_eager) rs.push_back(*torch_eager);
  if (torch_compile) rs.push_back(*torch_compile);
  print_table(rs, items_per_step, unit);
  if (torch_eager) std::printf("ratio_lazy_vs_torch=%.3f\n", torch_eager->ms / lazy.ms);
  if (torch_compile) std::printf("ratio_lazy_vs_compile=%.3f\n", torch_compile->ms / lazy.ms);
  return 0;
}

}  // namespace bench
