#!/usr/bin/env python3
"""Peer of bench/bert_step.cpp: one BERT sequence-classification training step in PyTorch +
transformers, MiniLM shape by default.

Usage: bert_step_peer.py --mode eager|compile --batch_size B --seq_len T --n_layer L --hidden C
           --n_head H --threads N --steps S --warmup W [--dropout P] [--bf16 0|1]

The step is the one bench/bert_step.cpp times on loom: BertForSequenceClassification (2 labels,
intermediate 4 x hidden, vocab 30522) forward with labels and a padding mask (row i keeps
T - (7 i mod min(40, T)) tokens; the same ids as loom's), backward, clip_grad_norm_(1.0), AdamW
(lr 5e-5, weight decay 0.01 except biases and LayerNorm weights, fused=True where available),
zero_grad(set_to_none=True); train mode, SDPA attention. --bf16 1 runs the forward under
torch.autocast("cpu", dtype=torch.bfloat16) with f32 master weights.

Best set-up, in this process only: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset,
OMP_WAIT_POLICY=PASSIVE, OMP_NUM_THREADS=MKL_NUM_THREADS=--threads before torch loads,
torch.set_num_threads(--threads). Prints "gemm:" lines (the BLAS torch was built with, its CPU
capability and the MKL/oneDNN verbose line of one f32 GEMM of the model's shape), then one JSON
line as bench/step_bench.h expects.
"""
import argparse
import json
import os
import sys
import time


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["eager", "compile"], default="eager")
    for name, default in [("batch_size", 16), ("seq_len", 64), ("n_layer", 6), ("hidden", 384),
                          ("n_head", 12), ("threads", 2), ("steps", 5), ("warmup", 2),
                          ("bf16", 0)]:
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--dropout", type=float, default=0.1)
    return p.parse_args()


ARGS = parse_args()
for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    os.environ.pop(var, None)
os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
os.environ["MKL_NUM_THREADS"] = str(ARGS.threads)

import resource  # noqa: E402

try:
    import torch  # noqa: E402
    import transformers  # noqa: E402
except ImportError as e:
    print("bert_step_peer: PyTorch peer skipped: %s (scripts/setup_peers.sh installs it)" % e)
    sys.exit(3)


def print_gemm_info():
    print("gemm: cpu capability:", torch.backends.cpu.get_cpu_capability(),
          "threads=%d" % torch.get_num_threads())
    for line in torch.__config__.show().splitlines():
        if "blas_info" in line.lower():
            print("gemm: config:", line.strip(" -")[:160])
    sys.stdout.flush()
    x = torch.randn(ARGS.batch_size * ARGS.seq_len, ARGS.hidden)
    w = torch.randn(4 * ARGS.hidden, ARGS.hidden)
    with torch.backends.mkl.verbose(torch.backends.mkl.VERBOSE_ON), \
            torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
        torch.nn.functional.linear(x, w)  # as nn.Linear
        if ARGS.bf16:
            torch.nn.functional.linear(x.bfloat16(), w.bfloat16())
    sys.stdout.flush()


def make_batch():
    b, t = ARGS.batch_size, ARGS.seq_len
    ids, mask = torch.zeros(b, t, dtype=torch.long), torch.zeros(b, t, dtype=torch.long)
    for i in range(b):
        length = t - (7 * i) % max(1, min(40, t))
        for j in range(length):
            ids[i, j] = (i * 7919 + j * 104729 + 101) % 30522
            mask[i, j] = 1
    labels = torch.tensor([i % 2 for i in range(b)])
    return ids, mask, labels


def make_model():
    cfg = transformers.BertConfig(
        vocab_size=30522, hidden_size=ARGS.hidden, num_hidden_layers=ARGS.n_layer,
        num_attention_heads=ARGS.n_head, intermediate_size=4 * ARGS.hidden,
        hidden_dropout_prob=ARGS.dropout, attention_probs_dropout_prob=ARGS.dropout,
        num_labels=2, attn_implementation="sdpa")
    model = transformers.BertForSequenceClassification(cfg)
    model.train()
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        low = name.lower()
        (no_decay if ("bias" in low or "layernorm" in low) else decay).append(p)
    groups = [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}]
    try:
        return model, torch.optim.AdamW(groups, lr=5e-5, fused=True), True
    except (RuntimeError, TypeError):
        return model, torch.optim.AdamW(groups, lr=5e-5), False


def main():
    torch.set_num_threads(ARGS.threads)
    torch.manual_seed(0)
    print_gemm_info()
    model, opt, fused = make_model()
    step_model = torch.compile(model) if ARGS.mode == "compile" else model
    ids, mask, labels = make_batch()
    times, cpu_times, faults, losses = [], [], [], []
    for _ in range(ARGS.warmup + ARGS.steps):
        t0, c0 = time.perf_counter(), time.process_time()
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bool(ARGS.bf16)):
            loss = step_model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        times.append((time.perf_counter() - t0) * 1e3)
        cpu_times.append((time.process_time() - c0) * 1e3)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
    w = ARGS.warmup
    pick = lambda v: sorted(v[w:])[len(v[w:]) // 2]  # noqa: E731
    print(json.dumps({
        "mode": ARGS.mode, "median_ms": pick(times), "median_cpu_ms": pick(cpu_times),
        "median_minor_faults": pick(faults), "step_ms": times, "first_step_ms": times[0],
        "loss_first": losses[0], "loss_last": losses[-1],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "torch": torch.__version__, "transformers": transformers.__version__,
        "threads": torch.get_num_threads(),
        "note": "AdamW fused=%d, attn %s%s" % (fused, model.config._attn_implementation,
                                               ", autocast bf16" if ARGS.bf16 else ""),
    }))


if __name__ == "__main__":
    main()
