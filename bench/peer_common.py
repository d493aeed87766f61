"""What the PyTorch peers of the step benchmarks share (gpt2_step_peer.py, bert_step_peer.py,
llama_step_peer.py): flags, the peer's best set-up, AdamW with the Trainer's decay groups, the
timed step loop and the JSON line bench/step_bench.h reads.

A peer script: ARGS = peer_common.parse_args(defaults); peer_common.setup(ARGS.threads) (before
torch loads); torch, transformers = peer_common.import_torch("name"); build the model and a
step function; peer_common.report(ARGS, model, peer_common.timed_steps(...), fused).

Best set-up, in the peer's process only: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset,
OMP_WAIT_POLICY=PASSIVE, OMP_NUM_THREADS=MKL_NUM_THREADS=--threads before torch is imported,
torch.set_num_threads(--threads), AdamW fused=True where this torch has it, SDPA attention.
Timing: wall time (perf_counter) and process CPU time per step, minor page faults per step,
median over the steps after --warmup; peak RSS is ru_maxrss of the whole process.
"""
import argparse
import json
import os
import resource
import sys
import time


def parse_args(defaults):
    """--mode eager|compile, --dropout P and one int flag per (name, default) in `defaults`."""
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["eager", "compile"], default="eager")
    for name, default in defaults:
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--dropout", type=float, default=0.1)
    return p.parse_args()


def setup(threads):
    """The peer's best set-up; call before importing torch (its OpenMP runtime reads these)."""
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        os.environ.pop(var, None)
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ["MKL_NUM_THREADS"] = str(threads)


def import_torch(prog):
    """(torch, transformers), or exit 3 with a message when either is missing."""
    try:
        import torch
        import transformers
    except ImportError as e:
        print("%s: PyTorch peer skipped: %s (scripts/setup_peers.sh installs it)" % (prog, e))
        sys.exit(3)
    return torch, transformers


def print_gemm_info(torch, rows, k, n):
    """The BLAS torch was built with, its CPU capability, and the MKL / oneDNN verbose line
    and GFLOP/s of one f32 GEMM [rows, k] x [k, n] as nn.Linear runs it."""
    print("gemm: cpu capability:", torch.backends.cpu.get_cpu_capability(),
          "threads=%d" % torch.get_num_threads())
    for line in torch.__config__.show().splitlines():
        if "blas_info" in line.lower():
            print("gemm: config:", line.strip(" -")[:160])
    sys.stdout.flush()
    x, w = torch.randn(rows, k), torch.randn(n, k)
    with torch.backends.mkl.verbose(torch.backends.mkl.VERBOSE_ON), \
            torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
        torch.nn.functional.linear(x, w)
    sys.stdout.flush()
    reps = 5
    t0 = time.perf_counter()
    for _ in range(reps):
        torch.nn.functional.linear(x, w)
    dt = (time.perf_counter() - t0) / reps
    print("gemm: linear %dx%dx%d f32: %.1f GFLOP/s" % (rows, k, n, 2.0 * rows * k * n / dt / 1e9))
    sys.stdout.flush()


def adamw(torch, model, lr, no_decay_words):
    """AdamW with the HF Trainer's groups: weight decay 0.01, none for parameters whose name
    contains one of `no_decay_words` (biases, norm weights). Returns (optimizer, fused)."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        low = name.lower()
        (no_decay if any(w in low for w in no_decay_words) else decay).append(p)
    groups = [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}]
    try:
        return torch.optim.AdamW(groups, lr=lr, fused=True), True
    except (RuntimeError, TypeError):
        return torch.optim.AdamW(groups, lr=lr), False


def timed_steps(torch, args, model, opt, loss_fn):
    """Runs warmup + steps training steps: loss_fn() (under autocast bf16 with --bf16 1),
    backward, clip_grad_norm_(1.0), opt.step(), zero_grad(set_to_none=True)."""
    stats = dict(times=[], cpu=[], faults=[], losses=[])
    for _ in range(args.warmup + args.steps):
        t0, c0 = time.perf_counter(), time.process_time()
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bool(getattr(args, "bf16", 0))):
            loss = loss_fn()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        stats["losses"].append(loss.item())
        stats["times"].append((time.perf_counter() - t0) * 1e3)
        stats["cpu"].append((time.process_time() - c0) * 1e3)
        stats["faults"].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
    return stats


def report(torch, transformers, args, model, stats, fused, **extra):
    """Prints the one JSON line bench/step_bench.h reads (median_ms, median_cpu_ms, ...)."""
    w = args.warmup

    def median(v):
        return sorted(v[w:])[len(v[w:]) // 2]

    bf16 = bool(getattr(args, "bf16", 0))
    out = {
        "mode": args.mode,
        "median_ms": median(stats["times"]),
        "median_cpu_ms": median(stats["cpu"]),
        "median_minor_faults": median(stats["faults"]),
        "step_ms": stats["times"],
        "first_step_ms": stats["times"][0],
        "loss_first": stats["losses"][0],
        "loss_last": stats["losses"][-1],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "adamw_fused": fused,
        "attn_implementation": model.config._attn_implementation,
        "num_parameters": sum(p.numel() for p in model.parameters()),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "threads": torch.get_num_threads(),
        "bf16": bf16,
        "note": "AdamW fused=%d, attn %s%s" % (fused, model.config._attn_implementation,
                                               ", autocast bf16" if bf16 else ""),
    }
    out.update(extra)
    print(json.dumps(out))
