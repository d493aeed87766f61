// bench/gpt2_step: one GPT-2 LM training step — forward with labels (causal-LM
// loss inside the model), backward, clip_grad_norm_(1.0), AdamW (lr 1e-4,
// weight decay 0.01 except biases and LayerNorm weights, as the Trainer groups
// them), zero_grad — timed on loom's eager `cpu` device, on the `lazy` device
// (plus mark_step), and on PyTorch eager and torch.compile through the peer
// bench/gpt2_step_peer.py, all in one run on the same CPU and thread count.
//
//   bench_gpt2_step --n_layer 12 --n_embd 768 --n_head 12 --block_size 256
//                   --batch_size 4 --threads 2 --steps 3 --warmup 1   (one line)
//   bench_gpt2_step --n_layer 4 --n_embd 256 --n_head 4 --block_size 128
//                   --batch_size 8 --threads 2                        (the demo model)
//
// Columns on XLA (issues 21, 24): "loom lazy:xla" (--xla 1, when a PJRT plugin is
// installed: docs/backends.md), "jax jit", the same step as one jax.jit
// program on JAX's XLA CPU (bench/gpt2_step_jax_peer.py, --jax 1; its
// interpreter is $LOOM_PEER_PYTHON, default python3), and "torch_xla", the
// PyTorch peer on PyTorch/XLA's PJRT CPU device (gpt2_step_peer.py --mode xla,
// --torch_xla 1: torch_xla.sync() and wait_device_ops() end each step; its
// interpreter is $LOOM_TORCH_XLA_PYTHON, default <repo>/.venv-torch-xla/bin/python,
// the venv scripts/setup_peers.sh makes; without it the column is skipped with
// a line). For lazy:xla and JAX the compile time is printed apart (loom:
// CompileTime, with XlaCompileTime inside it; JAX: lower().compile()); the
// torch_xla note gives its compilations in the warm-up and the timed steps and
// its graph executions per step. The lazy:xla column's note gives the device
// bytes loom holds (Buffer::live_bytes, PJRT buffers) at the first and last
// timed step: equal when donation keeps device memory flat.
// Other flags: --dropout (0.1, GPT-2's), --loom_eager 0 / --peer 0 / --compile 0
// skip a column; --bf16 1 runs loom under AutocastGuard (bf16) and the peer
// under torch.autocast("cpu", dtype=torch.bfloat16), both with f32 master
// weights; --fused_ce 0 turns the fused LM-head cross-entropy pass off
// (LOOM_FUSED_CE_MIN_CLASSES set past the vocabulary) for an A/B run;
// --gradient_checkpointing 1 recomputes each block's activations in backward
// (docs/remat.md; the note also gives the largest executable's arena, the
// intermediates); --split_optimizer 1 syncs after backward, so the
// forward+backward executable's arena holds the activations and backward
// temporaries only (the gradients are its outputs). (The Llama-style
// step is bench/llama_step.cpp.) Random weights and token ids
// (vocab 50257), the same batch every step, train mode. Each step waits for its results
// (lazy::wait()) before its time is taken, so ms/step is the latency of a whole step; the median
// over
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
// LOOM_SOURCE_DIR is set. Roofline (bench/roofline.h): the machine's GEMM
// and triad peaks are measured at start-up on --threads, and after the lazy
// column its model FLOPs per step, GFLOP/s and fraction of the GEMM peak, and
// (--kernel_times 1, the default: LOOM_KERNEL_TIMES=1) the kernels' time in
// and outside GEMMs.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/xla/xla_runtime.h"
#include "core/buffer.h"
#include "core/settings.h"
#include "loom/autocast.h"
#include "loom/gpt2.h"
#include "loom/lazy.h"
#include "loom/metrics.h"
#include "loom/omp_env.h"
#include "loom/optim.h"
#include "loom/parallel.h"
#include "loom/tensor.h"
#include "roofline.h"
#include "step_bench.h"

namespace {

using bench::Options;
using bench::Result;

Options defaults() {
  Options o;
  o.ints = {{"n_layer", 2}, {"n_embd", 128}, {"n_head", 4},   {"block_size", 64}, {"batch_size", 4},
            {"threads", 2}, {"steps", 5},    {"warmup", 2},   {"loom_eager", 1},  {"peer", 1},
            {"compile", 1}, {"bf16", 0},     {"fused_ce", 1}, {"xla", 1},         {"jax", 1}};
  o.ints["gradient_checkpointing"] = 0;
  o.ints["split_optimizer"] = 0;
  o.ints["kernel_times"] = 1;
  o.ints["torch_xla"] = 1;
  return o;
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

std::shared_ptr<loom::CausalLM> make_model(const Options& o) {
  return std::make_shared<loom::GPT2LMHeadModel>(make_config(o));
}

// The roofline lines of a lazy column (bench/roofline.h): GPT-2's
// parameters in matmuls are all but the position table (wte is the tied
// head).
void print_roofline(const Options& o, const loom::CausalLM& model, const loom::Device& dev,
                    const std::string& name, const bench::Result& r,
                    const bench::KernelTotals& before) {
  int64_t n = bench::matmul_params(model.named_parameters(), {"wpe"});
  int64_t t = o.get("block_size");
  double flops =
      bench::train_step_flops(n, o.get("n_layer"), t, o.get("n_embd"), t * o.get("batch_size"));
  bench::print_lazy_roofline(dev, name, flops, r, o.get("bf16") != 0, before, o.get("steps"));
}

// Times warmup + steps training steps of a fresh model on `dev`.
Result run_loom(const Options& o, const loom::Device& dev, const std::string& name) {
  bench::reset_peak_rss();
  loom::manual_seed(0);
  std::shared_ptr<loom::CausalLM> model = make_model(o);
  model->train();
  model->to(dev);
  if (o.get("gradient_checkpointing")) model->gradient_checkpointing_enable();
  loom::optim::AdamW opt(loom::optim::weight_decay_groups(model->named_parameters(), 0.01),
                         {.lr = 1e-4});
  const int64_t b = o.get("batch_size"), t = o.get("block_size");
  std::vector<int64_t> ids(b * t);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7919 + 13) % 50257);
  loom::Tensor input = loom::tensor_i64(ids, {b, t}).to(dev);
  bench::StepTimer timer;
  std::vector<double> trace, device_bytes;
  Result r;
  r.name = name;
  bench::KernelTotals kernels_before;
  for (int s = 0; s < o.get("warmup") + o.get("steps"); ++s) {
    if (s == o.get("warmup")) kernels_before = bench::kernel_totals();
    timer.start();
    loom::ModelInputs in;
    in.input_ids = in.labels = input;
    loom::Tensor loss;
    {
      loom::AutocastGuard amp(bench::autocast_on(o.get("bf16") != 0, dev));
      loss = model->forward(in).loss;  // the logits die here, as in the Trainer
    }
    loss.backward();
    loss = loss.detach();  // drops the autograd graph, which holds the logits (Trainer does too)
    if (o.get("split_optimizer") && dev.is_lazy()) loom::lazy::mark_step();
    loom::optim::clip_grad_norm_(model->parameters(), 1.0);
    opt.step();
    opt.zero_grad();
    if (dev.is_lazy()) loom::lazy::mark_step();
    double traced = timer.elapsed_ms();
    loom::lazy::wait();
    double l = loss.item();
    double ms = timer.elapsed_ms();
    if (s == 0) r.first_ms = ms, r.loss_first = l;
    r.loss_last = l;
    if (s < o.get("warmup")) continue;
    timer.record(ms);
    trace.push_back(traced);
    device_bytes.push_back(static_cast<double>(loom::Buffer::live_bytes()));
  }
  timer.finish(r);
  print_roofline(o, *model, dev, name, r, kernels_before);
  if (dev.backend == "xla") {
    char buf[256];
    std::snprintf(buf, sizeof(buf),
                  "device bytes held: %.1f MB at the first timed step, %.1f MB at the last (%zu "
                  "steps); XLA-planned peak %.1f MB",
                  device_bytes.front() / 1048576.0, device_bytes.back() / 1048576.0,
                  device_bytes.size(), loom::metrics::max_planned_peak_bytes() / 1048576.0);
    r.note = buf;
  } else if (dev.is_lazy()) {
    char buf[320];
    std::snprintf(buf, sizeof(buf),
                  "trace+launch %.1f ms of the step (median); planned peak %.1f MB (largest "
                  "executable: arena + undonated outputs), arena %.1f MB",
                  bench::median(trace), loom::metrics::max_planned_peak_bytes() / (1024.0 * 1024.0),
                  bench::max_arena_bytes() / (1024.0 * 1024.0));
    r.note = buf;
  }
  return r;
}

// Runs the PyTorch peer in `mode`: eager, compile, or xla (PyTorch/XLA, on
// the interpreter of torch_xla's venv).
std::optional<Result> run_peer(const Options& o, const std::string& mode) {
  std::string args = "--mode " + mode;
  for (const char* k : {"n_layer", "n_embd", "n_head", "block_size", "batch_size", "threads",
                        "steps", "warmup", "bf16"})
    args += std::string(" --") + k + " " + std::to_string(o.get(k));
  args += " --dropout " + std::to_string(o.dropout);
  std::string name = std::string(mode == "eager"     ? "torch eager"
                                 : mode == "compile" ? "torch.compile"
                                                     : "torch_xla") +
                     (o.get("bf16") ? " bf16" : "");
  std::string python = mode == "xla" ? bench::torch_xla_python(name) : "python3";
  if (python.empty()) return std::nullopt;
  return bench::run_peer("gpt2_step_peer.py", args, o.get("threads"), name, python);
}

// The lazy:xla column, the JAX peer and the PyTorch/XLA peer (after loom lazy
// in the table).
void add_xla_columns(const Options& o, std::vector<Result>& rs) {
  if (o.get("xla")) {
    std::string why = loom::backends::xla_backend().unavailable_reason();
    if (!why.empty()) {
      std::printf("loom lazy:xla skipped: %s\n", why.c_str());
    } else {
      loom::metrics::reset();
      rs.push_back(run_loom(o, loom::Device("lazy:xla"), "loom lazy:xla"));
      std::printf(
          "loom lazy:xla compile: CompileTime %.1f ms (XlaCompileTime %.1f ms, XlaCompile %lld, "
          "UncachedCompile %lld, CachedCompile %lld)\n",
          loom::metrics::timer_total_ns("CompileTime") / 1e6,
          loom::metrics::timer_total_ns("XlaCompileTime") / 1e6,
          static_cast<long long>(loom::metrics::counter("XlaCompile")),
          static_cast<long long>(loom::metrics::counter("UncachedCompile")),
          static_cast<long long>(loom::metrics::counter("CachedCompile")));
      bench::print_host_time("loom lazy:xla", o.get("warmup"));
    }
  }
  if (o.get("jax")) {
    std::string args;
    for (const char* k :
         {"n_layer", "n_embd", "n_head", "block_size", "batch_size", "threads", "steps", "warmup"})
      args += std::string(" --") + k + " " + std::to_string(o.get(k));
    args += " --dropout " + std::to_string(o.dropout);
    auto jax = bench::run_peer("gpt2_step_jax_peer.py", args, o.get("threads"), "jax jit",
                               bench::peer_python());
    if (jax) rs.push_back(*jax);
  }
  if (o.get("torch_xla")) {
    if (auto r = run_peer(o, "xla")) rs.push_back(*r);
  }
}

}  // namespace

int main(int argc, char** argv) {
  loom::apply_omp_env_defaults(argv);  // as the loom CLI: loom's OpenMP spin limit
  Options o = bench::parse(argc, argv, defaults(), "bench_gpt2_step");
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows when redirected to a file
  loom::set_num_threads(o.get("threads"));
  std::printf("%s\n", bench::omp_wait_line().c_str());
  if (!o.get("fused_ce")) {
    setenv("LOOM_FUSED_CE_MIN_CLASSES", "1000000000", 1);
    loom::settings::reload();  // settings are cached once read (core/settings.h)
  }
  bench::start_roofline(o.get("threads"), o.get("bf16") != 0, o.get("kernel_times") != 0);
  std::printf(
      "gpt2_step: n_layer=%d n_embd=%d n_head=%d block_size=%d batch_size=%d vocab=50257 "
      "threads=%d steps=%d warmup=%d dropout=%.2f bf16=%d fused_ce=%d "
      "gradient_checkpointing=%d split_optimizer=%d (median ms/step after warm-up)\n",
      o.get("n_layer"), o.get("n_embd"), o.get("n_head"), o.get("block_size"), o.get("batch_size"),
      o.get("threads"), o.get("steps"), o.get("warmup"), o.dropout, o.get("bf16"),
      o.get("fused_ce"), o.get("gradient_checkpointing"), o.get("split_optimizer"));
  return bench::run_comparison(
      o, [&](const loom::Device& dev, const std::string& name) { return run_loom(o, dev, name); },
      [&](const char* mode) { return run_peer(o, mode); },
      double(o.get("batch_size")) * o.get("block_size"), "tokens/s",
      [&](std::vector<Result>& rs) { add_xla_columns(o, rs); });
}
