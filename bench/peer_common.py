"""What the PyTorch peers of the step benchmarks share (gpt2_step_peer.py, bert_step_peer.py,
llama_step_peer.py): flags, the peer's best set-up, AdamW with the Trainer's decay groups, the
timed step loop and the JSON line bench/step_bench.h reads.

A peer script: ARGS = peer_common.parse_args(defaults); peer_common.setup(ARGS.threads,
ARGS.mode) (before torch loads); torch, transformers = peer_common.import_torch("name", ARGS.mode);
build the model, move it with peer_common.to_device(model, peer_common.device(torch, ARGS)),
and a step function;
peer_common.report(ARGS, model, peer_common.timed_steps(...), fused).

--mode xla (gpt2_step_peer.py, bert_step_peer.py; parse_args(..., XLA_MODES)) runs the same step
in PyTorch/XLA: PJRT_DEVICE=CPU (set by setup()), model and batch on torch_xla's device, AdamW
non-fused (fused=True has no XLA kernel), and each step ends with torch_xla.sync() (cuts the
traced graph and runs it, compiling it the first time) and xm.wait_device_ops() before the timer
stops, so a timed step is the real execution; the warm-up steps include the compilations (step 0
and step 1 differ: AdamW's state is created in the first). torch_xla comes from its own virtual
environment, .venv-torch-xla (scripts/setup_peers.sh), with the torch it is pinned to. XLA's CPU
client runs its own thread pool over all cores: --threads sets torch's threads only.

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


MODES = ("eager", "compile")
XLA_MODES = MODES + ("xla",)  # the peers that run on torch_xla too


def parse_args(defaults, modes=MODES):
    """--mode (one of `modes`), --dropout P and one int flag per (name, default) in `defaults`."""
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=modes, default="eager")
    for name, default in defaults:
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--dropout", type=float, default=0.1)
    return p.parse_args()


def setup(threads, mode="eager"):
    """The peer's best set-up; call before importing torch (its OpenMP runtime reads these, and
    torch_xla reads PJRT_DEVICE when it loads)."""
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        os.environ.pop(var, None)
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ["MKL_NUM_THREADS"] = str(threads)
    if mode == "xla":
        os.environ["PJRT_DEVICE"] = "CPU"


def import_torch(prog, mode="eager"):
    """(torch, transformers), or exit 3 with a message when either (or, for --mode xla,
    torch_xla) is missing."""
    try:
        import torch
        import transformers
        if mode == "xla":
            import torch_xla  # noqa: F401
    except ImportError as e:
        where = ("its venv .venv-torch-xla" if mode == "xla" else "it")
        print("%s: PyTorch peer skipped: %s (scripts/setup_peers.sh installs %s)" % (
            prog, e, where))
        sys.exit(3)
    return torch, transformers


def device(torch, args):
    """Where the model and the batch live: torch_xla's device (PJRT CPU) for --mode xla, else
    the CPU."""
    if args.mode == "xla":
        import torch_xla
        return torch_xla.device()
    return torch.device("cpu")


def to_device(model, dev):
    """model.to(dev), its tied weights tied again on XLA: there .to() copies each parameter
    apart (no shallow copy between CPU and XLA tensors), which would train GPT-2's LM head
    and token embedding as two tensors."""
    model = model.to(dev)
    if dev.type == "xla":
        model.tie_weights()
    return model


class XlaSync:
    """The end of a --mode xla step and its counters (torch_xla.debug.metrics)."""

    def __init__(self):
        import torch_xla
        import torch_xla.core.xla_model as xm
        import torch_xla.debug.metrics as met
        self.torch_xla, self.xm, self.met = torch_xla, xm, met

    def __call__(self):
        """Cuts the traced graph and runs it (torch_xla.sync(), formerly xm.mark_step()), then
        waits until the device has finished it."""
        self.torch_xla.sync()
        self.xm.wait_device_ops()

    def counts(self):
        """(compilations, their total ms, graph executions) so far."""
        compile_data = self.met.metric_data("CompileTime")
        execute_data = self.met.metric_data("ExecuteTime")
        return (compile_data[0] if compile_data else 0,
                compile_data[1] / 1e6 if compile_data else 0.0,
                execute_data[0] if execute_data else 0)

    def fallbacks(self):
        """The aten ops that ran on the CPU instead of XLA, but loss.item()'s
        _local_scalar_dense (the one host read a step makes on purpose)."""
        return [op for op in self.met.executed_fallback_ops()
                if op != "aten::_local_scalar_dense"]


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
    if next(model.parameters()).device.type == "xla":  # no fused (nor foreach) kernel on XLA
        return torch.optim.AdamW(groups, lr=lr, foreach=False), False
    try:
        return torch.optim.AdamW(groups, lr=lr, fused=True), True
    except (RuntimeError, TypeError):
        return torch.optim.AdamW(groups, lr=lr), False


def timed_steps(torch, args, model, opt, loss_fn):
    """Runs warmup + steps training steps: loss_fn() (under autocast bf16 with --bf16 1),
    backward, clip_grad_norm_(1.0), opt.step(), zero_grad(set_to_none=True); for --mode xla
    then XlaSync() (stats["xla"]: its counts() after the warm-up and at the end)."""
    stats = dict(times=[], cpu=[], faults=[], losses=[])
    sync = XlaSync() if args.mode == "xla" else None
    autocast_device = "xla" if sync else "cpu"
    for s in range(args.warmup + args.steps):
        if sync and s == args.warmup:
            stats["xla"] = [sync.counts()]
        t0, c0 = time.perf_counter(), time.process_time()
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        with torch.autocast(autocast_device, dtype=torch.bfloat16,
                            enabled=bool(getattr(args, "bf16", 0))):
            loss = loss_fn()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if sync:
            sync()
        stats["losses"].append(loss.item())
        stats["times"].append((time.perf_counter() - t0) * 1e3)
        stats["cpu"].append((time.process_time() - c0) * 1e3)
        stats["faults"].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
    if sync:
        stats["xla"].append(sync.counts())
        stats["xla_fallbacks"] = sync.fallbacks()
    return stats


def xla_report(torch, args, model, stats):
    """The JSON fields and the note of a --mode xla run: versions, compilations in and after
    the warm-up, graph executions per timed step, CPU fallbacks."""
    import torch_xla
    (c0, ms0, e0), (c1, ms1, e1) = stats["xla"]
    fallbacks = stats["xla_fallbacks"]
    note = ("PJRT CPU, attn %s, AdamW foreach=False%s, sync + wait_device_ops per "
            "step; warm-up: %d compiles %.0f ms; timed steps: %d compiles, %.1f executions/step"
            % (model.config._attn_implementation,
               ", autocast bf16" if getattr(args, "bf16", 0) else "", c0, ms0, c1 - c0,
               (e1 - e0) / args.steps))
    if fallbacks:
        note += ", CPU fallbacks: " + " ".join(fallbacks)
    return {
        "library": "torch %s + torch_xla %s" % (torch.__version__, torch_xla.__version__),
        "torch_xla": torch_xla.__version__,
        "device": str(torch_xla.device()),
        "pjrt_device": os.environ.get("PJRT_DEVICE", ""),
        "compile_ms": ms1,
        "compiles_warmup": c0,
        "compiles_timed": c1 - c0,
        "executions_per_step": (e1 - e0) / args.steps,
        "cpu_fallback_ops": fallbacks,
        "note": note,
    }


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
    if args.mode == "xla":
        out.update(xla_report(torch, args, model, stats))
    out.update(extra)
    print(json.dumps(out))
