#!/usr/bin/env python3
"""JAX peer of bench/bert_step.cpp: the same BERT sequence-classification training step as one
jax.jit program, in plain jax + jax.numpy.

Usage: bert_step_jax_peer.py --batch_size B --seq_len T --n_layer L --hidden C --n_head H
           --threads N --steps S --warmup W [--dropout P]

The step: forward as transformers' BertForSequenceClassification computes it (embeddings:
word + token type 0, then + learned position, LayerNorm eps 1e-12, dropout; post-LayerNorm
encoder layers: self-attention with the padding mask on the keys, dropout on the probabilities,
LayerNorm(dropout(dense(x)) + x), then an erf-GELU MLP of 4 x hidden with the same residual
LayerNorm; pooler tanh(dense(h[:, 0])), dropout, a 2-label classifier), mean cross-entropy over
the labels, backward (jax.grad; the padding row 0 of the word embedding gets no gradient, as
torch's padding_idx), clip_grad_norm_(1.0) as torch.nn.utils computes it (scale
max_norm / (norm + 1e-6), at most 1), AdamW (lr 5e-5, betas 0.9/0.999, eps 1e-8, decoupled
weight decay 0.01 except biases and LayerNorm weights, as the HF Trainer groups them).
Parameters and optimizer state are donated (donate_argnums), as loom donates them. Random
weights (BERT's init: normal 0.02, the padding row zero), the batch bench/bert_step_peer.py and
bench/bert_step.cpp build (row i keeps T - (7 i mod min(40, T)) tokens, labels i mod 2), the
same batch every step; dropout (--dropout, default 0.1, bench_bert_step's) with a key folded
per step.

Set-up, timing and the JSON line as bench/gpt2_step_jax_peer.py: JAX runs on its own XLA CPU
backend, whose threads are its own (all cores; --threads is taken for the flag set only);
compile_ms is jit(...).lower().compile() of the step, timed apart from the steps; first_step_ms
is the first call after it. Needs jax (pip install jax; see scripts/setup_peers.sh); exits 3
with a message without it.
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
    for name, default in (("batch_size", 16), ("seq_len", 64), ("n_layer", 6), ("hidden", 384),
                          ("n_head", 12), ("threads", 2), ("steps", 5), ("warmup", 2)):
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--dropout", type=float, default=0.1)
    return p.parse_args()


ARGS = parse_args()
try:
    import jax
    import jax.numpy as jnp
except ImportError as e:
    print("bert_step_jax_peer: JAX peer skipped: %s (pip install jax; scripts/setup_peers.sh)" % e)
    sys.exit(3)

VOCAB = 30522
TYPE_VOCAB = 2
NUM_LABELS = 2
PAD = 0  # BertConfig.pad_token_id: the word embedding's padding_idx


def init_params(key, cfg):
    """BERT's initialization: normal(0, 0.02) weights and tables, zero biases, LayerNorm 1 / 0,
    the padding row of the word embedding zero. Dense weights are [in, out]."""
    c, n_layer = cfg["hidden"], cfg["n_layer"]
    keys = iter(jax.random.split(key, 5 + 6 * n_layer))

    def normal(shape):
        return 0.02 * jax.random.normal(next(keys), shape, jnp.float32)

    def dense(n_in, n_out):
        return {"w": normal((n_in, n_out)), "b": jnp.zeros(n_out)}

    def layer_norm():
        return {"w": jnp.ones(c), "b": jnp.zeros(c)}

    params = {
        "embeddings": {"word": normal((VOCAB, c)).at[PAD].set(0.0),
                       "position": normal((cfg["n_positions"], c)),
                       "token_type": normal((TYPE_VOCAB, c)), "LayerNorm": layer_norm()},
        "layers": [],
        "pooler": dense(c, c),
        "classifier": dense(c, NUM_LABELS),
    }
    for _ in range(n_layer):
        params["layers"].append({
            "query": dense(c, c), "key": dense(c, c), "value": dense(c, c),
            "attn_out": dense(c, c), "attn_LayerNorm": layer_norm(),
            "intermediate": dense(c, 4 * c), "out": dense(4 * c, c), "out_LayerNorm": layer_norm(),
        })
    return params


def linear(x, p):
    return x @ p["w"] + p["b"]


def layer_norm(x, p, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + eps) * p["w"] + p["b"]


def dropout(x, rate, key):
    if rate == 0.0:
        return x
    keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
    return jnp.where(keep, x / (1.0 - rate), 0.0)


def forward_loss(params, ids, mask, labels, key, cfg):
    b, t = ids.shape
    c, h = cfg["hidden"], cfg["n_head"]
    rate = cfg["dropout"]
    keys = iter(jax.random.split(key, 2 + 3 * cfg["n_layer"]))
    emb = params["embeddings"]
    x = emb["word"][ids] + emb["token_type"][0]  # token_type_ids are all 0
    x = x + emb["position"][:t]
    x = dropout(layer_norm(x, emb["LayerNorm"]), rate, next(keys))  # [b, t, c]
    keep_key = mask[:, None, None, :].astype(bool)  # [b, 1, 1, t]: padded keys are masked out

    def heads(z):  # [b, t, c] -> [b, h, t, c / h]
        return z.reshape(b, t, h, c // h).transpose(0, 2, 1, 3)

    for lyr in params["layers"]:
        q, k, v = (heads(linear(x, lyr[n])) for n in ("query", "key", "value"))
        s = (q @ k.transpose(0, 1, 3, 2)) / math.sqrt(c // h)  # [b, h, t, t]
        s = jnp.where(keep_key, s, jnp.finfo(jnp.float32).min)
        w = dropout(jax.nn.softmax(s, -1), rate, next(keys))
        o = (w @ v).transpose(0, 2, 1, 3).reshape(b, t, c)
        x = layer_norm(dropout(linear(o, lyr["attn_out"]), rate, next(keys)) + x,
                       lyr["attn_LayerNorm"])
        m = jax.nn.gelu(linear(x, lyr["intermediate"]), approximate=False)  # erf GELU
        x = layer_norm(dropout(linear(m, lyr["out"]), rate, next(keys)) + x,
                       lyr["out_LayerNorm"])
    pooled = jnp.tanh(linear(x[:, 0], params["pooler"]))  # [b, c]
    logits = linear(dropout(pooled, rate, next(keys)), params["classifier"])  # [b, 2]
    logp = jax.nn.log_softmax(logits, -1)
    return -jnp.take_along_axis(logp, labels[:, None], -1).mean()


def decays(params):
    """1.0 for weights that decay, 0.0 for biases and LayerNorm weights (the Trainer's groups:
    names holding "bias" or "layernorm")."""
    def mark(path, _):
        names = [str(getattr(k, "key", getattr(k, "idx", ""))) for k in path]
        no = any(n == "b" or "layernorm" in n.lower() for n in names)
        return 0.0 if no else 1.0
    return jax.tree_util.tree_map_with_path(mark, params)


def make_step(cfg, decay_mask, lr=5e-5, b1=0.9, b2=0.999, eps=1e-8, wd=0.01):
    def step(params, m, v, count, ids, mask, labels, key):
        loss, grads = jax.value_and_grad(forward_loss)(params, ids, mask, labels, key, cfg)
        word = grads["embeddings"]["word"]
        grads["embeddings"]["word"] = word.at[PAD].set(0.0)  # torch's padding_idx
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


def make_batch():
    """ids, padding mask [B, T] and labels [B], as bench/bert_step.cpp builds them."""
    b, t = ARGS.batch_size, ARGS.seq_len
    ids, mask = [], []
    for i in range(b):
        length = t - (7 * i) % max(1, min(40, t))
        ids += [(i * 7919 + j * 104729 + 101) % VOCAB if j < length else PAD for j in range(t)]
        mask += [1 if j < length else 0 for j in range(t)]
    labels = [i % 2 for i in range(b)]
    return (jnp.array(ids, jnp.int32).reshape(b, t), jnp.array(mask, jnp.int32).reshape(b, t),
            jnp.array(labels, jnp.int32))


def main():
    cfg = {"n_layer": ARGS.n_layer, "hidden": ARGS.hidden, "n_head": ARGS.n_head,
           "n_positions": max(512, ARGS.seq_len), "dropout": ARGS.dropout}
    params = init_params(jax.random.PRNGKey(0), cfg)
    m = jax.tree_util.tree_map(jnp.zeros_like, params)
    v = jax.tree_util.tree_map(jnp.zeros_like, params)
    count = jnp.zeros((), jnp.float32)
    ids, mask, labels = make_batch()
    step = make_step(cfg, decays(params))
    base_key = jax.random.PRNGKey(1)
    t0 = time.perf_counter()
    compiled = step.lower(params, m, v, count, ids, mask, labels, base_key).compile()
    compile_ms = (time.perf_counter() - t0) * 1e3
    times, cpu, faults, losses = [], [], [], []
    for s in range(ARGS.warmup + ARGS.steps):
        t0, c0 = time.perf_counter(), time.process_time()
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        params, m, v, count, loss = compiled(params, m, v, count, ids, mask, labels,
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
        "torch": "none", "backend": jax.default_backend(),
        "note": "jit compile %.0f ms, donated params+AdamW state, backend %s, threads %s" % (
            compile_ms, jax.default_backend(), os.cpu_count()),
    }))


if __name__ == "__main__":
    main()
