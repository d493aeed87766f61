// bench/gpt2_step: one GPT-2 LM training step — forward with labels (causal-LM
// loss inside the model), backward, clip_grad_norm_(1.0), AdamW (lr 1e-4,
// weight decay 0.01 except biases and LayerNorm weights, as the Trainer groups
// them), zero_grad — timed on loom's eager `cpu` device, on the `lazy` device
// (plus mark_step), and on PyTorch eager and torch.compile through the peer
// bench/gpt2_step_peer.py, all in one run on the same CPU and thread count.
//
//   bench_gpt2_step --n_layer 12 --n_embd 768 --n_head 12 --block_size 256
//                   --batch_size 4 --threads 2 --steps 3 --warmup 1   (one line)
//
// Other flags: --dropout (0.1, GPT-2's), --loom_eager 0 / --peer 0 / --compile 0
// skip a column. Random weights and token ids (vocab 50257), the same batch
// every step, train mode. Each step waits for its results (lazy::wait()) before
// its time is taken, so ms/step is the latency of a whole step; the median over
// --steps after --warmup is printed, with the process CPU time per step beside
// it (the machine may be shared; CPU time is what load distorts least).
// faults/step is the median number of minor page faults in a step (fresh pages
// mapped: large buffers allocated anew each step instead of reused).
// Peak RSS is VmHWM of /proc/self/status, reset (clear_refs 5) before each
// loom column (the lazy column's note gives the memory plan's planned peak
// beside it: the largest executable's arena + undonated outputs); the peer runs each column in its
// own process. The peer gets its best set-up in its own process only: OPENBLAS_CORETYPE /
// OPENBLAS_L2_SIZE unset, OMP_WAIT_POLICY=PASSIVE, OMP_NUM_THREADS = MKL_NUM_THREADS =
// torch.set_num_threads = --threads; it prints the GEMM library and kernel it
// uses (lines starting with "gemm:" and MKL_VERBOSE). Last lines:
// ratio_lazy_vs_torch=<loom lazy tokens/s / PyTorch eager tokens/s> and
// ratio_lazy_vs_compile=<... / torch.compile tokens/s>. Without python3 +
// torch + transformers the peer is skipped with a message (exit 0).
// The repository root (for the peer script) is found from __FILE__ unless
// LOOM_SOURCE_DIR is set.
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "loom/gpt2.h"
#include "loom/lazy.h"
#include "loom/metrics.h"
#include "loom/optim.h"
#include "loom/parallel.h"
#include "loom/tensor.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Options {
  std::map<std::string, int> ints = {{"n_layer", 2},     {"n_embd", 128},   {"n_head", 4},
                                     {"block_size", 64}, {"batch_size", 4}, {"threads", 2},
                                     {"steps", 5},       {"warmup", 2},     {"loom_eager", 1},
                                     {"peer", 1},        {"compile", 1}};
  double dropout = 0.1;
  int get(const std::string& k) const { return ints.at(k); }
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0 || i + 1 >= argc) {
      std::fprintf(stderr, "usage: bench_gpt2_step [--flag value]... (bad argument %s)\n",
                   k.c_str());
      std::exit(2);
    }
    k = k.substr(2);
    if (k == "dropout") {
      o.dropout = std::atof(argv[i + 1]);
    } else if (o.ints.count(k)) {
      o.ints[k] = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "unknown flag --%s\n", k.c_str());
      std::exit(2);
    }
  }
  if (o.get("steps") < 1 || o.get("warmup") < 0 || o.get("threads") < 1) {
    std::fprintf(stderr, "--steps must be >= 1, --warmup >= 0, --threads >= 1\n");
    std::exit(2);
  }
  return o;
}

double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return 1e3 * static_cast<double>(ts.tv_sec) + 1e-6 * static_cast<double>(ts.tv_nsec);
}

// Minor page faults of the process so far (each maps a fresh page: the cost of
// allocating large buffers anew every step).
double minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_minflt);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// Peak resident set (VmHWM) in MiB; reset_peak_rss() restarts it from the current RSS.
double peak_rss_mb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  }
  return 0.0;
}

void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

// One column of the result table.
struct Result {
  std::string name;
  double ms = 0, cpu_ms = 0, first_ms = 0, rss_mb = 0, loss_first = 0, loss_last = 0;
  double faults = 0;  // minor page faults per step (median)
  std::string note;
};

double tokens_per_s(const Options& o, double ms) {
  return ms > 0 ? 1e3 * o.get("batch_size") * o.get("block_size") / ms : 0.0;
}

loom::GPT2Config make_config(const Options& o) {
  loom::GPT2Config cfg;
  cfg.vocab_size = 50257;
  cfg.n_positions = std::max(1024, o.get("block_size"));
  cfg.n_layer = o.get("n_layer");
  cfg.n_embd = o.get("n_embd");
  cfg.n_head = o.get("n_head");
  cfg.resid_pdrop = cfg.embd_pdrop = cfg.attn_pdrop = o.dropout;
  return cfg;
}

// Times warmup + steps training steps of a fresh model on `dev`.
Result run_loom(const Options& o, const loom::Device& dev, const std::string& name) {
  reset_peak_rss();
  loom::manual_seed(0);
  auto model = std::make_shared<loom::GPT2LMHeadModel>(make_config(o));
  model->train();
  model->to(dev);
  loom::optim::AdamW opt(loom::optim::weight_decay_groups(model->named_parameters(), 0.01),
                         {.lr = 1e-4});
  const int64_t b = o.get("batch_size"), t = o.get("block_size");
  std::vector<int64_t> ids(b * t);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7919 + 13) % 50257);
  loom::Tensor input = loom::tensor_i64(ids, {b, t}).to(dev);
  std::vector<double> wall, cpu, trace, faults;
  Result r;
  r.name = name;
  for (int s = 0; s < o.get("warmup") + o.get("steps"); ++s) {
    auto t0 = Clock::now();
    double c0 = process_cpu_ms(), f0 = minor_faults();
    loom::ModelInputs in;
    in.input_ids = in.labels = input;
    loom::Tensor loss = model->forward(in).loss;
    loss.backward();
    loom::optim::clip_grad_norm_(model->parameters(), 1.0);
    opt.step();
    opt.zero_grad();
    if (dev.is_lazy()) loom::lazy::mark_step();
    double traced = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    loom::lazy::wait();
    double l = loss.item();
    double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (s == 0) r.first_ms = ms, r.loss_first = l;
    r.loss_last = l;
    if (s < o.get("warmup")) continue;
    wall.push_back(ms);
    cpu.push_back(process_cpu_ms() - c0);
    trace.push_back(traced);
    faults.push_back(minor_faults() - f0);
  }
  r.faults = median(faults);
  r.ms = median(wall);
  r.cpu_ms = median(cpu);
  r.rss_mb = peak_rss_mb();
  if (dev.is_lazy()) {
    char buf[256];
    std::snprintf(buf, sizeof(buf),
                  "trace+launch %.1f ms of the step (median); planned peak %.1f MB (largest "
                  "executable: arena + undonated outputs)",
                  median(trace), loom::metrics::max_planned_peak_bytes() / (1024.0 * 1024.0));
    r.note = buf;
  }
  return r;
}

std::string repo_root() {
  if (const char* env = std::getenv("LOOM_SOURCE_DIR")) return env;
  return fs::path(__FILE__).parent_path().parent_path().string();
}

// Runs the peer in `mode`; echoes its lines with a "  peer| " prefix and returns
// its result, or nullopt (with a message) when it fails or torch is missing.
std::optional<Result> run_peer(const Options& o, const std::string& mode) {
  const std::string n = std::to_string(o.get("threads"));
  std::string cmd =
      "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_WAIT_POLICY=PASSIVE "
      "OMP_NUM_THREADS=" +
      n + " MKL_NUM_THREADS=" + n + " python3 '" + repo_root() +
      "/bench/gpt2_step_peer.py' --mode " + mode;
  for (const char* k :
       {"n_layer", "n_embd", "n_head", "block_size", "batch_size", "threads", "steps", "warmup"}) {
    cmd += std::string(" --") + k + " " + std::to_string(o.get(k));
  }
  cmd += " --dropout " + std::to_string(o.dropout) + " 2>&1";
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
        "peer (%s) skipped: exit code %d (needs python3 with torch and transformers;"
        " scripts/setup_peers.sh installs them)\n",
        mode.c_str(), code);
    return std::nullopt;
  }
  Result r;
  r.name = mode == "eager" ? "torch eager" : "torch.compile";
  r.ms = j["median_ms"];
  r.cpu_ms = j["median_cpu_ms"];
  r.first_ms = j["first_step_ms"];
  r.faults = j["median_minor_faults"];
  r.rss_mb = j["peak_rss_mb"];
  r.loss_first = j["loss_first"];
  r.loss_last = j["loss_last"];
  r.note = "torch " + j["torch"].get<std::string>() +
           ", AdamW fused=" + (j["adamw_fused"].get<bool>() ? "1" : "0") + ", attn " +
           j["attn_implementation"].get<std::string>();
  return r;
}

void print_table(const Options& o, const std::vector<Result>& rs) {
  std::printf("\n%-18s %10s %12s %9s %13s %11s %13s  %s\n", "implementation", "ms/step",
              "CPU ms/step", "tokens/s", "first step ms", "peak RSS MB", "faults/step",
              "loss first -> last");
  for (const Result& r : rs) {
    std::printf("%-18s %10.1f %12.1f %9.0f %13.1f %11.0f %13.0f  %.4f -> %.4f  %s\n",
                r.name.c_str(), r.ms, r.cpu_ms, tokens_per_s(o, r.ms), r.first_ms, r.rss_mb,
                r.faults, r.loss_first, r.loss_last, r.note.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows when redirected to a file
  loom::set_num_threads(o.get("threads"));
  std::printf(
      "gpt2_step: n_layer=%d n_embd=%d n_head=%d block_size=%d batch_size=%d vocab=50257 "
      "threads=%d steps=%d warmup=%d dropout=%.2f (median ms/step after warm-up)\n",
      o.get("n_layer"), o.get("n_embd"), o.get("n_head"), o.get("block_size"), o.get("batch_size"),
      o.get("threads"), o.get("steps"), o.get("warmup"), o.dropout);
  std::vector<Result> rs;
  if (o.get("loom_eager")) rs.push_back(run_loom(o, loom::Device("cpu"), "loom cpu (eager)"));
  loom::metrics::reset();
  Result lazy = run_loom(o, loom::Device("lazy"), "loom lazy");
  rs.push_back(lazy);
  std::printf(
      "loom lazy compile: CompileTime %.1f ms (UncachedCompile %lld, CachedCompile %lld), "
      "ExecuteTime %.1f ms over %lld executions\n",
      loom::metrics::timer_total_ns("CompileTime") / 1e6,
      static_cast<long long>(loom::metrics::counter("UncachedCompile")),
      static_cast<long long>(loom::metrics::counter("CachedCompile")),
      loom::metrics::timer_total_ns("ExecuteTime") / 1e6,
      static_cast<long long>(loom::metrics::timer_count("ExecuteTime")));
  std::optional<Result> torch_eager, torch_compile;
  if (o.get("peer")) torch_eager = run_peer(o, "eager");
  if (torch_eager && o.get("compile")) torch_compile = run_peer(o, "compile");
  if (torch_eager) rs.push_back(*torch_eager);
  if (torch_compile) rs.push_back(*torch_compile);
  print_table(o, rs);
  if (torch_eager) std::printf("ratio_lazy_vs_torch=%.3f\n", torch_eager->ms / lazy.ms);
  if (torch_compile) std::printf("ratio_lazy_vs_compile=%.3f\n", torch_compile->ms / lazy.ms);
  return 0;
}
