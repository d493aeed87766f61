"""Python's per-step overhead in loom.Trainer (issue 38: under 1 % of the step).

The loop runs in C++; Python runs only on events. This measures, on the same
model and data, in alternating rounds after a warm-up run (so every round
hits the compile cache):
  plain      Trainer without Python callbacks (the step-end signal check and
             on_log dispatch only),
  callbacks  Trainer with a callback overriding the four per-step events
             (on_step_begin, on_pre_optimizer_step, on_optimizer_step,
             on_step_end), each a no-op,
and, separately, one event's Python-side cost (CallbackHandler.dispatch with
one no-op callback). Per-step time is train_runtime / max_steps.

    PYTHONPATH=<loom package> python bench/python_trainer_overhead.py [--rounds 5] [--steps 40] [--tiny]

Model: the demo step (GPT-2 4 layers x 256, 4 heads, batch 8 x 128 tokens), lazy device.
"""

import argparse
import statistics
import tempfile
import time

import numpy as np

import loom

# The demo step of bench/RESULTS.md: GPT-2 4 layers x 256, 4 heads, B8 T128.
CONFIG = {"model_type": "gpt2", "n_layer": 4, "n_embd": 256, "n_head": 4, "n_positions": 128,
          "vocab_size": 50257}
# --tiny: a step of about a millisecond, so the events' cost shows in absolute terms.
TINY = {"model_type": "gpt2", "n_layer": 1, "n_embd": 16, "n_head": 2, "n_positions": 128,
        "vocab_size": 64}


class NoOp(loom.TrainerCallback):
    def on_step_begin(self, args, state, control, **kwargs):
        pass

    def on_pre_optimizer_step(self, args, state, control, **kwargs):
        pass

    def on_optimizer_step(self, args, state, control, **kwargs):
        pass

    def on_step_end(self, args, state, control, **kwargs):
        pass


def rows(n=32, length=128):
    rng = np.random.default_rng(0)
    out = []
    for _ in range(n):
        ids = [int(v) for v in rng.integers(0, CONFIG["vocab_size"], length)]
        out.append({"input_ids": ids, "labels": ids})
    return out


def step_seconds(data, steps, callbacks):
    loom.manual_seed(0)
    model = loom.AutoModelForCausalLM.from_config(CONFIG)
    with tempfile.TemporaryDirectory() as out:
        args = loom.TrainingArguments(output_dir=out, max_steps=steps, logging_steps=steps,
                                      save_strategy="no", per_device_train_batch_size=8,
                                      report_to="none", disable_tqdm=True, device="lazy")
        trainer = loom.Trainer(model=model, args=args, train_dataset=data, callbacks=callbacks)
        return trainer.train().metrics["train_runtime"] / steps


def dispatch_seconds(calls=20000):
    class Holder:
        pass

    holder = Holder()
    holder.state, holder.control = loom.TrainerState(), loom.TrainerControl()
    holder.args, holder.model, holder.processing_class = None, None, None
    from loom.trainer_callback import CallbackHandler
    handler = CallbackHandler(holder, [NoOp()])
    flags = (False,) * 5
    start = time.perf_counter()
    for _ in range(calls):
        handler.dispatch("on_step_end", 1, 0.5, 10, flags, None)
    return (time.perf_counter() - start) / calls


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--tiny", action="store_true", help="a 1-layer x 16 GPT-2, vocab 64")
    opts = parser.parse_args()
    if opts.tiny:
        CONFIG.clear()
        CONFIG.update(TINY)
    data = rows()
    step_seconds(data, 3, [])  # warm-up: compiles the step once
    plain, with_cb = [], []
    for _ in range(opts.rounds):
        plain.append(step_seconds(data, opts.steps, []))
        with_cb.append(step_seconds(data, opts.steps, [NoOp()]))
    p, c = statistics.median(plain), statistics.median(with_cb)
    event = dispatch_seconds()
    print(f"step, no Python callback:        {p * 1e3:8.3f} ms (median of {opts.rounds})")
    print(f"step, 4 no-op step events:       {c * 1e3:8.3f} ms ({(c - p) / p * 100:+.2f} %, "
          f"{(c - p) * 1e6:+.1f} us)")
    print(f"one event's Python dispatch:     {event * 1e6:8.2f} us "
          f"(4 per step: {4 * event / p * 100:.3f} % of the step)")


if __name__ == "__main__":
    main()
