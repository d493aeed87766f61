// bench/lora_step: LoRA fine-tuning vs full fine-tuning of a Llama-style
// LlamaForCausalLM, in one run on the same CPU and thread count: one training
// step = forward with labels, backward, clip_grad_norm_(1.0) over the
// trainable parameters, AdamW (lr 1e-4, weight decay 0.01 as the Trainer
// groups it), zero_grad, mark_step on the lazy device. The LoRA column
// wraps the model with loom::get_peft_model (r --lora_r, alpha 2r, targets
// --targets: 0 = PEFT's default q_proj,v_proj, 1 = all-linear), so the base
// is frozen: no gradients and no AdamW moments for it.
//
//   bench_lora_step --n_layer 4 --n_embd 512 --n_head 8 --n_kv_head 4 --block_size 128
//                   --batch_size 4 --threads 2 --steps 5 --warmup 2      (one line)
//
// Other flags: --lora_r (16), --targets (0), --device_lazy (1; 0 = eager cpu).
// Random weights and token ids (vocab 50257), the same batch every step,
// train mode. Each step waits for its results before its time is taken; the
// median over --steps after --warmup is printed with the process CPU time per
// step (the machine may be shared). Peak RSS is VmHWM of /proc/self/status,
// reset (clear_refs 5) before each column; the LoRA column runs first, so the
// full column's peak is not hidden by memory the LoRA run left mapped. The
// table adds trainable parameters and the AdamW state (MB) of each column.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "loom/lazy.h"
#include "loom/llama.h"
#include "loom/lora.h"
#include "loom/metrics.h"
#include "loom/optim.h"
#include "loom/parallel.h"
#include "loom/tensor.h"
#include "step_bench.h"

namespace {

using bench::Options;
using bench::Result;

Options lora_defaults() {
  Options o;
  o.ints = {{"n_layer", 2},     {"n_embd", 128},   {"n_head", 4},  {"n_kv_head", 2},
            {"block_size", 64}, {"batch_size", 4}, {"threads", 2}, {"steps", 5},
            {"warmup", 2},      {"lora_r", 16},    {"targets", 0}, {"device_lazy", 1}};
  return o;
}

loom::LlamaConfig lora_bench_config(const Options& o) {
  loom::LlamaConfig cfg;
  cfg.vocab_size = 50257;
  cfg.max_position_embeddings = std::max(1024, o.get("block_size"));
  cfg.num_hidden_layers = o.get("n_layer");
  cfg.hidden_size = o.get("n_embd");
  cfg.num_attention_heads = o.get("n_head");
  cfg.num_key_value_heads = o.get("n_kv_head");
  cfg.intermediate_size = (8 * o.get("n_embd") / 3 + 63) / 64 * 64;
  return cfg;
}

struct LoraColumn {
  Result result;
  int64_t trainable = 0, total = 0;
  double optimizer_mb = 0;
};

LoraColumn run_column(const Options& o, const loom::Device& dev, bool lora) {
  bench::reset_peak_rss();
  loom::manual_seed(0);
  std::shared_ptr<loom::CausalLM> model =
      std::make_shared<loom::LlamaForCausalLM>(lora_bench_config(o));
  if (lora) {
    loom::LoraConfig cfg;
    cfg.r = o.get("lora_r");
    cfg.lora_alpha = 2.0 * cfg.r;
    if (o.get("targets") == 1) cfg.target_modules = {"all-linear"};
    model = loom::get_peft_model(model, cfg);
  }
  model->train();
  model->to(dev);
  loom::optim::AdamW opt(loom::optim::weight_decay_groups(model->named_parameters(), 0.01),
                         {.lr = 1e-4});
  std::vector<loom::Tensor> params;
  LoraColumn col;
  for (const loom::Tensor& p : model->parameters()) {
    col.total += p.numel();
    if (!p.requires_grad()) continue;
    params.push_back(p);
    col.trainable += p.numel();
  }
  const int64_t b = o.get("batch_size"), t = o.get("block_size");
  std::vector<int64_t> ids(b * t);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7919 + 13) % 50257);
  loom::Tensor input = loom::tensor_i64(ids, {b, t}).to(dev);
  bench::StepTimer timer;
  Result& r = col.result;
  r.name = lora ? "loom LoRA r=" + std::to_string(o.get("lora_r")) : "loom full fine-tune";
  for (int s = 0; s < o.get("warmup") + o.get("steps"); ++s) {
    timer.start();
    loom::ModelInputs in;
    in.input_ids = in.labels = input;
    loom::Tensor loss = model->forward(in).loss;
    loss.backward();
    loss = loss.detach();
    loom::optim::clip_grad_norm_(params, 1.0);
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
  int64_t state_bytes = 0;
  for (const auto& [id, ps] : opt.state_dict().state)
    for (const auto& [name, buf] : ps.buffers) state_bytes += buf.numel() * 4;
  col.optimizer_mb = static_cast<double>(state_bytes) / (1024.0 * 1024.0);
  char note[160];
  std::snprintf(note, sizeof note, "trainable %lld of %lld params; AdamW state %.1f MB",
                static_cast<long long>(col.trainable), static_cast<long long>(col.total),
                col.optimizer_mb);
  r.note = note;
  return col;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = bench::parse(argc, argv, lora_defaults(), "bench_lora_step");
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  loom::set_num_threads(o.get("threads"));
  const loom::Device dev(o.get("device_lazy") ? "lazy" : "cpu");
  std::printf(
      "lora_step: LlamaForCausalLM n_layer=%d n_embd=%d n_head=%d n_kv_head=%d intermediate=%lld "
      "vocab=50257 block_size=%d batch_size=%d threads=%d steps=%d warmup=%d device=%s; LoRA r=%d "
      "alpha=%d targets=%s\n",
      o.get("n_layer"), o.get("n_embd"), o.get("n_head"), o.get("n_kv_head"),
      static_cast<long long>(lora_bench_config(o).intermediate_size), o.get("block_size"),
      o.get("batch_size"), o.get("threads"), o.get("steps"), o.get("warmup"), dev.str().c_str(),
      o.get("lora_r"), 2 * o.get("lora_r"), o.get("targets") ? "all-linear" : "q_proj,v_proj");
  LoraColumn lora = run_column(o, dev, /*lora=*/true);
  LoraColumn full = run_column(o, dev, /*lora=*/false);
  bench::print_table({lora.result, full.result}, double(o.get("batch_size")) * o.get("block_size"),
                     "tokens/s");
  std::printf("ratio_step_time_lora_vs_full=%.3f\n", lora.result.ms / full.result.ms);
  std::printf("ratio_peak_rss_lora_vs_full=%.3f\n", lora.result.rss_mb / full.result.rss_mb);
  return 0;
}
