#!/usr/bin/env python3
"""Peer of bench/gpt2_step.cpp: one GPT-2 LM training step in PyTorch + transformers.

Usage: gpt2_step_peer.py --mode eager|compile --n_layer L --n_embd C --n_head H
           --block_size T --batch_size B --threads N --steps S --warmup W [--dropout P]
           [--bf16 0|1]

With --bf16 1 the forward runs under torch.autocast("cpu", dtype=torch.bfloat16) (f32 master
weights and optimizer, as the HF Trainer's --bf16); the backward follows autocast's casts.

The step is the one bench/gpt2_step.cpp times on loom: forward with labels (causal-LM loss
inside the model), backward, clip_grad_norm_(1.0), AdamW (weight decay 0.01 except biases and
LayerNorm weights, as the Trainer groups them), zero_grad(set_to_none=True). Random weights and
random token ids (vocab 50257), the same batch every step, model in train mode.

The peer gets its best set-up, in this process only: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE
unset, OMP_WAIT_POLICY=PASSIVE, OMP_NUM_THREADS=MKL_NUM_THREADS=--threads (set before torch is
imported), torch.set_num_threads(--threads), AdamW with fused=True where this torch has it, and
PyTorch's scaled-dot-product attention. `--mode compile` wraps the model in torch.compile
(inductor); the warm-up steps include its compilation, whose time is reported.

Prints lines starting with "gemm:" (the BLAS / oneDNN torch was built with and the kernel MKL
reports for one f32 GEMM of the model's shape), then one JSON line:
{"mode": ..., "median_ms": ..., "median_cpu_ms": ..., "median_minor_faults": ...,
 "step_ms": [...], "first_step_ms": ..., "loss_first": ...,
 "loss_last": ..., "peak_rss_mb": ..., "torch": version, "transformers": version, ...}
"""
import argparse
import json
import os
import sys
import time


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["eager", "compile"], default="eager")
    for name, default in [("n_layer", 2), ("n_embd", 128), ("n_head", 4), ("block_size", 64),
                          ("batch_size", 4), ("threads", 2), ("steps", 5), ("warmup", 2),
                          ("bf16", 0), ("llama", 0), ("n_kv_head", 0)]:
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--dropout", type=float, default=0.1)
    return p.parse_args()


ARGS = parse_args()
# Best set-up for the peer, before torch (and its OpenMP runtime) loads.
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
    print("gpt2_step_peer: PyTorch peer skipped: %s (scripts/setup_peers.sh installs it)" % e)
    sys.exit(3)


def print_gemm_info(c):
    """Which GEMM library torch was built with, and the kernel MKL picks for one GEMM."""
    for line in torch.__config__.show().splitlines():
        low = line.lower()
        if any(k in low for k in ("math kernel", "mkl-dnn", "onednn", "openblas")):
            print("gemm: config:", line.strip(" -"))
        elif "blas_info" in low:
            for part in line.strip(" -").split(", "):
                if any(k in part.lower() for k in ("blas_info", "use_mkl", "openblas")):
                    print("gemm: config:", part.strip())
    print("gemm: torch.backends.mkl.is_available()=%s mkldnn.is_available()=%s "
          "openmp.is_available()=%s threads=%d" %
          (torch.backends.mkl.is_available(), torch.backends.mkldnn.is_available(),
           torch.backends.openmp.is_available(), torch.get_num_threads()))
    print("gemm: cpu capability:", torch.backends.cpu.get_cpu_capability())
    # MKL_VERBOSE lines (written by MKL to fd 1) name the function and ISA of the call.
    sys.stdout.flush()
    x = torch.randn(ARGS.batch_size * ARGS.block_size, c)
    w = torch.randn(c, 4 * c)
    b = torch.zeros(4 * c)
    with torch.backends.mkl.verbose(torch.backends.mkl.VERBOSE_ON), \
            torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
        torch.addmm(b, x, w)  # as transformers' Conv1D
    sys.stdout.flush()
    torch.addmm(b, x, w)
    reps = 5
    t0 = time.perf_counter()
    for _ in range(reps):
        torch.addmm(b, x, w)
    dt = (time.perf_counter() - t0) / reps
    print("gemm: addmm %dx%dx%d f32: %.1f GFLOP/s" % (x.shape[0], c, 4 * c, 2 * x.numel() * 4 * c / dt / 1e9))
    sys.stdout.flush()


def make_llama():
    """bench/gpt2_step.cpp's make_llama_config: the same Llama-style model."""
    cfg = transformers.LlamaConfig(
        vocab_size=50257, max_position_embeddings=max(1024, ARGS.block_size),
        hidden_size=ARGS.n_embd, num_hidden_layers=ARGS.n_layer, num_attention_heads=ARGS.n_head,
        num_key_value_heads=ARGS.n_kv_head or ARGS.n_head,
        intermediate_size=(8 * ARGS.n_embd // 3 + 63) // 64 * 64, attn_implementation="sdpa")
    return transformers.LlamaForCausalLM(cfg)


def make_model():
    if ARGS.llama:
        model = make_llama()
    else:
        cfg = transformers.GPT2Config(
            vocab_size=50257, n_positions=max(1024, ARGS.block_size), n_embd=ARGS.n_embd,
            n_layer=ARGS.n_layer, n_head=ARGS.n_head, resid_pdrop=ARGS.dropout,
            embd_pdrop=ARGS.dropout, attn_pdrop=ARGS.dropout, attn_implementation="sdpa")
        model = transformers.GPT2LMHeadModel(cfg)
    model.train()
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        low = name.lower()
        (no_decay if ("bias" in low or ".ln_" in low or "norm" in low) else decay).append(p)
    groups = [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}]
    try:
        opt = torch.optim.AdamW(groups, lr=1e-4, fused=True)
        fused = True
    except (RuntimeError, TypeError):
        opt = torch.optim.AdamW(groups, lr=1e-4)
        fused = False
    return model, opt, fused


def main():
    torch.set_num_threads(ARGS.threads)
    torch.manual_seed(0)
    print_gemm_info(ARGS.n_embd)
    model, opt, fused = make_model()
    step_model = torch.compile(model) if ARGS.mode == "compile" else model
    ids = torch.randint(0, 50257, (ARGS.batch_size, ARGS.block_size))
    times, cpu_times, faults, losses = [], [], [], []
    for _ in range(ARGS.warmup + ARGS.steps):
        t0, c0 = time.perf_counter(), time.process_time()
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bool(ARGS.bf16)):
            loss = step_model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        times.append((time.perf_counter() - t0) * 1e3)
        cpu_times.append((time.process_time() - c0) * 1e3)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
    timed = sorted(times[ARGS.warmup:])
    cpu_timed = sorted(cpu_times[ARGS.warmup:])
    print(json.dumps({
        "mode": ARGS.mode,
        "median_ms": timed[len(timed) // 2],
        "median_cpu_ms": cpu_timed[len(cpu_timed) // 2],
        "median_minor_faults": sorted(faults[ARGS.warmup:])[len(cpu_timed) // 2],
        "step_ms": times,
        "first_step_ms": times[0],
        "loss_first": losses[0],
        "loss_last": losses[-1],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "adamw_fused": fused,
        "attn_implementation": model.config._attn_implementation,
        "num_parameters": sum(p.numel() for p in model.parameters()),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "threads": torch.get_num_threads(),
        "bf16": bool(ARGS.bf16),
        "note": "AdamW fused=%d, attn %s%s" % (fused, model.config._attn_implementation,
                                               ", autocast bf16" if ARGS.bf16 else ""),
    }))


if __name__ == "__main__":
    main()
