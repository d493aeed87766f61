// bench/adamw_step: the optimizer step alone — clip_grad_norm_ + AdamW over
// the parameters of a GPT-2 model (the demo config by default: 4 layers, 256
// wide, vocab 50257, ~16.3M parameters in ~50 tensors) with the Trainer's
// weight-decay groups, on the lazy device. Gradients are fixed device data
// (set anew each step, dropped by zero_grad as in training), so each timed
// step is one executable: the clip's norm and the per-parameter updates. Prints the median wall and
// CPU ms per step and the memory-traffic floor (7 f32 accesses per element: read p, g, m, v; write
// p, m, v) as GB/s.
//   ./build/bench_adamw_step [--n_layer 4 --n_embd 256 --steps 10 --warmup 2 --threads 2]
#include <algorithm>
#include <cstdio>

#include "loom/gpt2.h"
#include "loom/lazy.h"
#include "loom/ops.h"
#include "loom/optim.h"
#include "loom/parallel.h"
#include "step_bench.h"

int main(int argc, char** argv) {
  bench::Options o;
  o.ints = {{"n_layer", 4}, {"n_embd", 256}, {"n_head", 4},
            {"steps", 10},  {"warmup", 2},   {"threads", 2}};
  o = bench::parse(argc, argv, o, "bench_adamw_step");
  loom::set_num_threads(o.get("threads"));
  loom::GPT2Config cfg;
  cfg.vocab_size = 50257;
  cfg.n_layer = o.get("n_layer");
  cfg.n_embd = o.get("n_embd");
  cfg.n_head = o.get("n_head");
  loom::manual_seed(0);
  loom::GPT2LMHeadModel model(cfg);
  loom::Device dev("lazy");
  model.to(dev);
  int64_t elements = 0, tensors = 0;
  std::vector<loom::Tensor> params = model.parameters(), grads;
  for (const loom::Tensor& p : params) {
    grads.push_back((loom::randn(p.shape()) * 1e-3).to(dev));
    elements += p.numel();
    ++tensors;
  }
  loom::optim::AdamW opt(loom::optim::weight_decay_groups(model.named_parameters(), 0.01),
                         {.lr = 1e-4});
  loom::lazy::mark_step();
  loom::lazy::wait();
  bench::StepTimer timer;
  for (int s = 0; s < o.get("warmup") + o.get("steps"); ++s) {
    timer.start();
    // A fresh handle per step (x * 1 folds away): the clip rebinds it, and
    // zero_grad drops it, so, as in training, the clipped gradients are no
    // graph outputs.
    for (size_t i = 0; i < params.size(); ++i) params[i].set_grad(loom::mul(grads[i], 1.0));
    loom::optim::clip_grad_norm_(params, 1.0);
    opt.step();
    opt.zero_grad();
    loom::lazy::mark_step();
    loom::lazy::wait();
    double ms = timer.elapsed_ms();
    if (s >= o.get("warmup")) timer.record(ms);
  }
  bench::Result r;
  r.name = "adamw step";
  timer.finish(r);
  const double gb = 7.0 * 4.0 * static_cast<double>(elements) / 1e9;
  std::printf("AdamW + clip over %lld tensors, %.2fM elements, %d threads\n",
              static_cast<long long>(tensors), elements / 1e6, o.get("threads"));
  std::printf("median %.2f ms/step (CPU %.2f ms), %.1f GB/s of the 7-access floor (%.3f GB)\n",
              r.ms, r.cpu_ms, gb / (r.ms / 1e3), gb);
  return 0;
}
