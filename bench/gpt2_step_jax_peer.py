#!/usr/bin/env python3
"""JAX peer of bench/gpt2_step.cpp: the same GPT-2 LM training step as one jax.jit program.

Usage: gpt2_step_jax_peer.py --n_layer L --n_embd C --n_head H --block_size T --batch_size B
           --threads N --steps S --warmup W [--dropout P] [--bf16 1]

The step: forward (GPT-2 as transformers' GPT2LMHeadModel computes it: learned positions,
pre-LayerNorm blocks, tanh-GELU MLP, LM head tied to the token embedding), the causal-LM loss
(logits[:, :-1] against ids[:, 1:], mean cross-entropy), backward (jax.grad),
clip_grad_norm_(1.0) as torch.nn.utils computes it (scale max_norm / (norm + 1e-6), at most
1), AdamW (lr 1e-4, betas 0.9/0.999, eps 1e-8, decoupled weight decay 0.01 except biases and
LayerNorm weights, as the HF Trainer groups them). Parameters and optimizer state are donated
(donate_argnums), as loom donates them. Random weights (normal 0.02, GPT-2's init), token ids
as bench/gpt2_step.cpp makes them, the same batch every step; dropout (--dropout, default 0.1)
with a key folded per step. --bf16 1: every matmul takes bf16 operands and gives a bf16
result (f32 accumulation), the rest in f32 with f32 master weights: torch.autocast's bf16 and
loom's --bf16 (the device run, scripts/device/run.sh).

JAX runs on its own XLA CPU backend (jaxlib's, the compiler the xla-cpu-pjrt plugin also
ships); XLA's CPU threads are its own (all cores). compile_ms is jit(...).lower().compile() of
the step, timed apart from the steps; first_step_ms is the first call after it. Prints the one
JSON line bench/step_bench.h reads. Needs jax (pip install jax; see scripts/setup_peers.sh);
exits 3 with a message without it.
"""
import argparse
import json
import math
import os
import resource
import sys
import time


def parse_args():
    p = argparse.ArgumentParser()
    for name, default in (("n_layer", 2), ("n_embd", 128), ("n_head", 4), ("block_size", 64),
                          ("batch_size", 4), ("threads", 2), ("steps", 5), ("warmup", 2),
                          ("bf16", 0)):
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--dropout", type=float, default=0.1)
    return p.parse_args()


ARGS = parse_args()
try:
    import jax
    import jax.numpy as jnp
except ImportError as e:
    print("gpt2_step_jax_peer: JAX peer skipped: %s (pip install jax; scripts/setup_peers.sh)" % e)
    sys.exit(3)

VOCAB = 50257


def init_params(key, cfg):
    """GPT-2's initialization: normal(0, 0.02) weights, c_proj scaled by 1/sqrt(2 n_layer)."""
    c, n_layer = cfg["n_embd"], cfg["n_layer"]
    keys = iter(jax.random.split(key, 4 + 4 * n_layer))

    def normal(shape, std=0.02):
        return std * jax.random.normal(next(keys), shape, jnp.float32)

    proj_std = 0.02 / math.sqrt(2 * n_layer)
    params = {"wte": normal((VOCAB, c)), "wpe": normal((cfg["n_positions"], c)),
              "ln_f": {"w": jnp.ones(c), "b": jnp.zeros(c)}, "h": []}
    for _ in range(n_layer):
        params["h"].append({
            "ln_1": {"w": jnp.ones(c), "b": jnp.zeros(c)},
            "c_attn": {"w": normal((c, 3 * c)), "b": jnp.zeros(3 * c)},
            "attn_proj": {"w": normal((c, c), proj_std), "b": jnp.zeros(c)},
            "ln_2": {"w": jnp.ones(c), "b": jnp.zeros(c)},
            "c_fc": {"w": normal((c, 4 * c)), "b": jnp.zeros(4 * c)},
            "mlp_proj": {"w": normal((4 * c, c), proj_std), "b": jnp.zeros(c)},
        })
    return params


def layer_norm(x, p, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + eps) * p["w"] + p["b"]


def gelu_tanh(x):  # GPT-2's gelu_new
    return 0.5 * x * (1.0 + jnp.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def dropout(x, rate, key):
    if rate == 0.0:
        return x
    keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
    return jnp.where(keep, x / (1.0 - rate), 0.0)


def mm(a, b):
    """a @ b; under --bf16 on bf16 operands with a bf16 result, as autocast's matmul."""
    if ARGS.bf16:
        return jnp.matmul(a.astype(jnp.bfloat16), b.astype(jnp.bfloat16),
                          preferred_element_type=jnp.float32).astype(jnp.bfloat16)
    return a @ b


def forward_loss(params, ids, key, cfg):
    b, t = ids.shape
    c, h = cfg["n_embd"], cfg["n_head"]
    rate = cfg["dropout"]
    keys = iter(jax.random.split(key, 1 + 3 * cfg["n_layer"]))
    x = params["wte"][ids] + params["wpe"][:t]
    x = dropout(x, rate, next(keys))
    causal = jnp.tril(jnp.ones((t, t), bool))
    for blk in params["h"]:
        a = mm(layer_norm(x, blk["ln_1"]), blk["c_attn"]["w"]) + blk["c_attn"]["b"]
        q, k, v = [z.reshape(b, t, h, c // h).transpose(0, 2, 1, 3) for z in jnp.split(a, 3, -1)]
        s = mm(q, k.transpose(0, 1, 3, 2)).astype(jnp.float32) / math.sqrt(c // h)
        s = jnp.where(causal, s, jnp.finfo(jnp.float32).min)
        w = dropout(jax.nn.softmax(s, -1), rate, next(keys))
        o = mm(w, v).transpose(0, 2, 1, 3).reshape(b, t, c)
        x = x + dropout(mm(o, blk["attn_proj"]["w"]) + blk["attn_proj"]["b"], rate, next(keys))
        m = gelu_tanh(mm(layer_norm(x, blk["ln_2"]), blk["c_fc"]["w"]) + blk["c_fc"]["b"])
        x = x + dropout(mm(m, blk["mlp_proj"]["w"]) + blk["mlp_proj"]["b"], rate, next(keys))
    logits = mm(layer_norm(x, params["ln_f"]), params["wte"].T)  # [b, t, vocab], tied head
    logp = jax.nn.log_softmax(logits[:, :-1].astype(jnp.float32), -1)
    nll = -jnp.take_along_axis(logp, ids[:, 1:, None], -1)
    return nll.mean()


def decays(params):
    """1.0 for weights that decay, 0.0 for biases and LayerNorm weights (the Trainer's groups)."""
    def mark(path, _):
        names = [getattr(k, "key", getattr(k, "idx", "")) for k in path]
        no = any(n in ("b", "ln_1", "ln_2", "ln_f") for n in names)
        return 0.0 if no else 1.0
    return jax.tree_util.tree_map_with_path(mark, params)


def make_step(cfg, decay_mask, lr=1e-4, b1=0.9, b2=0.999, eps=1e-8, wd=0.01):
    def step(params, m, v, count, ids, key):
        loss, grads = jax.value_and_grad(forward_loss)(params, ids, key, cfg)
        norm = jnp.sqrt(sum(jnp.sum(g * g) for g in jax.tree_util.tree_leaves(grads)))
        scale = jnp.minimum(1.0, 1.0 / (norm + 1e-6))
        grads = jax.tree_util.tree_map(lambda g: g * scale, grads)
        count = count + 1
        c1, c2 = 1 - b1 ** count, 1 - b2 ** count
        m = jax.tree_util.tree_map(lambda m_, g: b1 * m_ + (1 - b1) * g, m, grads)
        v = jax.tree_util.tree_map(lambda v_, g: b2 * v_ + (1 - b2) * g * g, v, grads)

        def update(p, m_, v_, d):
            p = p * (1 - lr * wd * d)
            return p - lr * (m_ / c1) / (jnp.sqrt(v_ / c2) + eps)
        params = jax.tree_util.tree_map(update, params, m, v, decay_mask)
        return params, m, v, count, loss
    return jax.jit(step, donate_argnums=(0, 1, 2))


def main():
    cfg = {"n_layer": ARGS.n_layer, "n_embd": ARGS.n_embd, "n_head": ARGS.n_head,
           "n_positions": max(1024, ARGS.block_size), "dropout": ARGS.dropout}
    params = init_params(jax.random.PRNGKey(0), cfg)
    m = jax.tree_util.tree_map(jnp.zeros_like, params)
    v = jax.tree_util.tree_map(jnp.zeros_like, params)
    count = jnp.zeros((), jnp.float32)
    n = ARGS.batch_size * ARGS.block_size
    ids = jnp.array([(i * 7919 + 13) % VOCAB for i in range(n)], jnp.int32).reshape(
        ARGS.batch_size, ARGS.block_size)
    step = make_step(cfg, decays(params))
    base_key = jax.random.PRNGKey(1)
    t0 = time.perf_counter()
    compiled = step.lower(params, m, v, count, ids, base_key).compile()
    compile_ms = (time.perf_counter() - t0) * 1e3
    times, cpu, faults, losses = [], [], [], []
    for s in range(ARGS.warmup + ARGS.steps):
        t0, c0 = time.perf_counter(), time.process_time()
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        params, m, v, count, loss = compiled(params, m, v, count, ids,
                                             jax.random.fold_in(base_key, s))
        losses.append(float(loss))  # waits for the step, as loom's loss.item()
        times.append((time.perf_counter() - t0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
    w = ARGS.warmup

    def median(xs):
        return sorted(xs[w:])[len(xs[w:]) // 2]

    num_params = sum(x.size for x in jax.tree_util.tree_leaves(params))
    print(json.dumps({
        "mode": "jit", "median_ms": median(times), "median_cpu_ms": median(cpu),
        "median_minor_faults": median(faults), "step_ms": times, "first_step_ms": times[0],
        "compile_ms": compile_ms, "loss_first": losses[0], "loss_last": losses[-1],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "num_parameters": int(num_params), "library": "jax " + jax.__version__,
        "tokens": n, "bf16": bool(ARGS.bf16),
        "torch": "none", "backend": jax.default_backend(),
        "note": "jit compile %.0f ms, donated params+AdamW state, backend %s, threads %s" % (
            compile_ms, jax.default_backend(), os.cpu_count()),
    }))


if __name__ == "__main__":
    main()
