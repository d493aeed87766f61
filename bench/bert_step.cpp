// bench/bert_step: one BERT sequence-classification training step in the
// MiniLM shape (6 layers, hidden 384, 12 heads, intermediate 1536, vocab
// 30522, 2 labels), batch 16 x 64 tokens with a padding mask (row i keeps
// 64 - (7 i mod 40) tokens) — the job scripts/finetune.sh runs — timed on
// loom's eager `cpu` device, on `lazy` (plus mark_step), on PyTorch +
// transformers through the peer bench/bert_step_peer.py (eager, torch.compile,
// PyTorch/XLA) and on JAX (bench/bert_step_jax_peer.py), in one run on the
// same CPU and thread count. A step: forward with labels (cross-entropy in
// the model), backward, clip_grad_norm_(1.0), AdamW (lr 5e-5, weight decay
// 0.01 except biases and LayerNorm weights), zero_grad; train mode (dropout
// 0.1), random weights and ids, the same batch every step.
//
//   bench_bert_step --threads 2 --steps 5 --warmup 2
//
// Flags: --batch_size 16 --seq_len 64 --n_layer 6 --hidden 384 --n_head 12
// --threads --steps --warmup --dropout; --loom_eager 0 / --peer 0 / --jax 0 /
// --torch_xla 0 skip a column, --compile 1 adds torch.compile; --bf16 1 runs
// loom under AutocastGuard and the PyTorch peers under torch.autocast
// (bfloat16; the JAX peer stays f32).
//
// Columns on XLA (issue 24), after loom lazy: "jax jit", the same step as one
// jax.jit program on JAX's XLA CPU (bench/bert_step_jax_peer.py, --jax 1; its
// interpreter is $LOOM_PEER_PYTHON, default python3; the jit compile time is
// in its note), and "torch_xla", the PyTorch peer on PyTorch/XLA's PJRT CPU
// device (bert_step_peer.py --mode xla, --torch_xla 1: torch_xla.sync() and
// wait_device_ops() end each step; its note gives the compilations in the
// warm-up and the timed steps and the graph executions per step). Its
// interpreter is $LOOM_TORCH_XLA_PYTHON, default
// <repo>/.venv-torch-xla/bin/python (made by scripts/setup_peers.sh); without
// it the column is skipped with a line.
//
// Prints the median ms/step after warm-up, CPU ms/step, samples/s, peak RSS
// (VmHWM, reset before each loom column; each peer column has its own
// process) and ratio_lazy_vs_torch=<loom lazy samples/s / PyTorch eager
// samples/s>.
// The roofline lines of the lazy column as bench_gpt2_step's
// (bench/roofline.h; --kernel_times 0 turns the kernel times off).
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/autocast.h"
#include "loom/bert.h"
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
  o.ints = {{"batch_size", 16},  {"seq_len", 64}, {"n_layer", 6},  {"hidden", 384},
            {"n_head", 12},      {"threads", 2},  {"steps", 5},    {"warmup", 2},
            {"loom_eager", 1},   {"peer", 1},     {"compile", 0},  {"bf16", 0},
            {"kernel_times", 1}, {"jax", 1},      {"torch_xla", 1}};
  return o;
}

loom::BertConfig make_config(const Options& o) {
  loom::BertConfig cfg;
  cfg.hidden_size = o.get("hidden");
  cfg.num_hidden_layers = o.get("n_layer");
  cfg.num_attention_heads = o.get("n_head");
  cfg.intermediate_size = 4 * o.get("hidden");
  cfg.hidden_dropout_prob = cfg.attention_probs_dropout_prob = o.dropout;
  cfg.set_num_labels(2);
  return cfg;
}

// The batch both sides use: ids, padding mask, labels (same formulas in the peer).
struct Batch {
  std::vector<int64_t> ids, mask, labels;
};
Batch make_batch(const Options& o) {
  int64_t b = o.get("batch_size"), t = o.get("seq_len");
  Batch r;
  for (int64_t i = 0; i < b; ++i) {
    int64_t len = t - (7 * i) % std::max<int64_t>(1, std::min<int64_t>(40, t));
    for (int64_t j = 0; j < t; ++j) {
      r.ids.push_back(j < len ? (i * 7919 + j * 104729 + 101) % 30522 : 0);
      r.mask.push_back(j < len ? 1 : 0);
    }
    r.labels.push_back(i % 2);
  }
  return r;
}

Result run_loom(const Options& o, const loom::Device& dev, const std::string& name) {
  bench::reset_peak_rss();
  loom::manual_seed(0);
  auto model = std::make_shared<loom::BertForSequenceClassification>(make_config(o));
  model->train();
  model->to(dev);
  loom::optim::AdamW opt(loom::optim::weight_decay_groups(model->named_parameters(), 0.01),
                         {.lr = 5e-5});
  int64_t b = o.get("batch_size"), t = o.get("seq_len");
  Batch batch = make_batch(o);
  loom::ModelInputs in;
  in.input_ids = loom::tensor_i64(batch.ids, {b, t}).to(dev);
  in.attention_mask = loom::tensor_i64(batch.mask, {b, t}).to(dev);
  in.labels = loom::tensor_i64(batch.labels, {b}).to(dev);
  bench::StepTimer timer;
  Result r;
  r.name = name;
  bench::KernelTotals kernels_before;
  for (int s = 0; s < o.get("warmup") + o.get("steps"); ++s) {
    if (s == o.get("warmup")) kernels_before = bench::kernel_totals();
    timer.start();
    loom::Tensor loss;
    {
      loom::AutocastGuard amp(bench::autocast_on(o.get("bf16") != 0, dev));
      loss = model->forward(in).loss;
    }
    loss.backward();
    loss = loss.detach();  // drops the autograd graph before mark_step, as the Trainer does
    loom::optim::clip_grad_norm_(model->parameters(), 1.0);
    opt.step();
    opt.zero_grad();
    if (dev.is_lazy()) loom::lazy::mark_step();
    loom::lazy::wait();
    double l = loss.item();
    double ms = timer.elapsed_ms();
    if (s == 0) r.first_ms = ms, r.loss_first = l;
    r.loss_last = l;
    if (s >= o.get("warmup")) timer.record(ms);
  }
  timer.finish(r);
  // Model FLOPs: the embedding tables are lookups; the pooler and the
  // classifier run on one token per row, counted as on every token (< 1 %).
  int64_t n = bench::matmul_params(model->named_parameters(), {"embeddings."});
  double flops = bench::train_step_flops(n, o.get("n_layer"), t, o.get("hidden"), b * t);
  bench::print_lazy_roofline(dev, name, flops, r, o.get("bf16") != 0, kernels_before,
                             o.get("steps"));
  return r;
}

// The model and batch flags both peers take.
std::string peer_args(const Options& o) {
  std::string args;
  for (const char* k :
       {"batch_size", "seq_len", "n_layer", "hidden", "n_head", "threads", "steps", "warmup"})
    args += std::string(" --") + k + " " + std::to_string(o.get(k));
  return args + " --dropout " + std::to_string(o.dropout);
}

// Runs the PyTorch peer in `mode`: eager, compile, or xla (PyTorch/XLA, on
// the interpreter of torch_xla's venv).
std::optional<Result> run_peer(const Options& o, const std::string& mode) {
  std::string args = "--mode " + mode + peer_args(o) + " --bf16 " + std::to_string(o.get("bf16"));
  std::string name = std::string(mode == "eager"     ? "torch eager"
                                 : mode == "compile" ? "torch.compile"
                                                     : "torch_xla") +
                     (o.get("bf16") ? " bf16" : "");
  std::string python = mode == "xla" ? bench::torch_xla_python(name) : "python3";
  if (python.empty()) return std::nullopt;
  return bench::run_peer("bert_step_peer.py", args, o.get("threads"), name, python);
}

// The JAX peer and the PyTorch/XLA peer (after loom lazy in the table).
void add_xla_columns(const Options& o, std::vector<Result>& rs) {
  if (o.get("jax")) {
    auto jax = bench::run_peer("bert_step_jax_peer.py", peer_args(o), o.get("threads"), "jax jit",
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
  Options o = bench::parse(argc, argv, defaults(), "bench_bert_step");
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  loom::set_num_threads(o.get("threads"));
  std::printf("%s\n", bench::omp_wait_line().c_str());
  bench::start_roofline(o.get("threads"), o.get("bf16") != 0, o.get("kernel_times") != 0);
  std::printf(
      "bert_step: BertForSequenceClassification n_layer=%d hidden=%d n_head=%d batch=%d x %d "
      "(padded) threads=%d steps=%d warmup=%d dropout=%.2f bf16=%d\n",
      o.get("n_layer"), o.get("hidden"), o.get("n_head"), o.get("batch_size"), o.get("seq_len"),
      o.get("threads"), o.get("steps"), o.get("warmup"), o.dropout, o.get("bf16"));
  return bench::run_comparison(
      o, [&](const loom::Device& dev, const std::string& name) { return run_loom(o, dev, name); },
      [&](const char* mode) { return run_peer(o, mode); }, double(o.get("batch_size")), "samples/s",
      [&](std::vector<Result>& rs) { add_xla_columns(o, rs); });
}
