// bench/llama_step: one Llama-style causal-LM training step — LlamaForCausalLM
// (RMSNorm, rotary, SwiGLU width 8/3 hidden rounded up to 64, grouped-query
// attention with --n_kv_head key/value heads, untied head, vocab 50257, no
// dropout), forward with labels, backward, clip_grad_norm_(1.0), AdamW (lr
// 1e-4, weight decay 0.01 except biases and norm weights), zero_grad — timed
// on loom's eager `cpu` device, on the `lazy` device (plus mark_step), and on
// transformers' LlamaForCausalLM in PyTorch eager and torch.compile through the
// peer bench/llama_step_peer.py, all in one run on the same CPU and threads.
//
//   bench_llama_step --n_layer 12 --hidden 768 --n_head 12 --n_kv_head 4
//                    --block_size 256 --batch_size 4 --threads 2 --steps 3 --warmup 1
//
// Flags: --loom_eager 0 / --peer 0 / --compile 0 skip a column; --bf16 1 runs
// loom under AutocastGuard (bf16) and the peer under torch.autocast. Token ids
// (i * 7919 + 13) mod 50257 on both sides, the same batch every step, train
// mode; random weights (loom's and torch's differ: only the losses' scale is
// comparable). Each step waits for its results before its time is taken; the
// median over --steps after --warmup is printed with the process CPU time
// beside it (the machine may be shared). Set-up of the peer, the columns and
// the last lines (ratio_lazy_vs_torch=..., ratio_lazy_vs_compile=...) are
// those of bench/gpt2_step.cpp (bench/step_bench.h), and so are the
// roofline lines (bench/roofline.h; --kernel_times 0 turns the kernel times off).
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/autocast.h"
#include "loom/lazy.h"
#include "loom/llama.h"
#include "loom/metrics.h"
#include "loom/optim.h"
#include "loom/parallel.h"
#include "loom/tensor.h"
#include "roofline.h"
#include "step_bench.h"

namespace {

using bench::Options;
using bench::Result;

Options llama_step_defaults() {
  Options o;
  o.ints = {{"n_layer", 2},     {"hidden", 128},    {"n_head", 4},  {"n_kv_head", 2},
            {"block_size", 64}, {"batch_size", 4},  {"threads", 2}, {"steps", 5},
            {"warmup", 2},      {"loom_eager", 1},  {"peer", 1},    {"compile", 1},
            {"bf16", 0},        {"kernel_times", 1}};
  return o;
}

// The model (the peer builds the same one).
loom::LlamaConfig llama_step_config(const Options& o) {
  loom::LlamaConfig cfg;
  cfg.vocab_size = 50257;
  cfg.max_position_embeddings = std::max(1024, o.get("block_size"));
  cfg.num_hidden_layers = o.get("n_layer");
  cfg.hidden_size = o.get("hidden");
  cfg.num_attention_heads = o.get("n_head");
  cfg.num_key_value_heads = o.get("n_kv_head") > 0 ? o.get("n_kv_head") : o.get("n_head");
  cfg.intermediate_size = (8 * o.get("hidden") / 3 + 63) / 64 * 64;
  cfg.tie_word_embeddings = false;
  return cfg;
}

// Times warmup + steps training steps of a fresh model on `dev`.
Result run_llama_step(const Options& o, const loom::Device& dev, const std::string& name) {
  bench::reset_peak_rss();
  loom::manual_seed(0);
  auto model = std::make_shared<loom::LlamaForCausalLM>(llama_step_config(o));
  model->train();
  model->to(dev);
  loom::optim::AdamW opt(loom::optim::weight_decay_groups(model->named_parameters(), 0.01),
                         {.lr = 1e-4});
  const int64_t b = o.get("batch_size"), t = o.get("block_size");
  std::vector<int64_t> ids(b * t);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7919 + 13) % 50257);
  loom::Tensor input = loom::tensor_i64(ids, {b, t}).to(dev);
  bench::StepTimer timer;
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
      loom::AutocastGuard amp(o.get("bf16") != 0);
      loss = model->forward(in).loss;
    }
    loss.backward();
    loss = loss.detach();
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
  int64_t n = bench::matmul_params(model->named_parameters(), {"embed_tokens"});  // untied head
  double flops = bench::train_step_flops(n, o.get("n_layer"), t, o.get("hidden"), b * t);
  bench::print_lazy_roofline(dev, name, flops, r, o.get("bf16") != 0, kernels_before,
                             o.get("steps"));
  if (dev.is_lazy()) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "planned peak %.1f MB (largest executable)",
                  loom::metrics::max_planned_peak_bytes() / (1024.0 * 1024.0));
    r.note = buf;
  }
  return r;
}

std::optional<Result> run_llama_peer(const Options& o, const std::string& mode) {
  std::string args = "--mode " + mode;
  for (const char* k : {"n_layer", "hidden", "n_head", "n_kv_head", "block_size", "batch_size",
                        "threads", "steps", "warmup", "bf16"})
    args += std::string(" --") + k + " " + std::to_string(o.get(k));
  std::string name = std::string(mode == "eager" ? "torch eager" : "torch.compile") +
                     (o.get("bf16") ? " bf16" : "");
  return bench::run_peer("llama_step_peer.py", args, o.get("threads"), name);
}

}  // namespace

int main(int argc, char** argv) {
  Options o = bench::parse(argc, argv, llama_step_defaults(), "bench_llama_step");
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  loom::set_num_threads(o.get("threads"));
  bench::start_roofline(o.get("threads"), o.get("bf16") != 0, o.get("kernel_times") != 0);
  const loom::LlamaConfig cfg = llama_step_config(o);
  std::printf(
      "llama_step: n_layer=%d hidden=%d n_head=%d n_kv_head=%lld intermediate=%lld "
      "block_size=%d batch_size=%d vocab=50257 threads=%d steps=%d warmup=%d bf16=%d (median "
      "ms/step after warm-up)\n",
      o.get("n_layer"), o.get("hidden"), o.get("n_head"), static_cast<long long>(cfg.kv_heads()),
      static_cast<long long>(cfg.intermediate_size), o.get("block_size"), o.get("batch_size"),
      o.get("threads"), o.get("steps"), o.get("warmup"), o.get("bf16"));
  return bench::run_comparison(
      o,
      [&](const loom::Device& dev, const std::string& name) {
        return run_llama_step(o, dev, name);
      },
      [&](const char* mode) { return run_llama_peer(o, mode); },
      double(o.get("batch_size")) * o.get("block_size"), "tokens/s");
}
