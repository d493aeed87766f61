#!/usr/bin/env python3
"""examples/python/run_clm.py on loom against the same script on transformers + PyTorch
(issue 38's goal: >= 1.5x with `from loom import`), in alternating rounds.

The script is run twice per round, each time as a fresh process (imports included, as a user
runs it), with the same argv: once as written (`from transformers import ...`, under
--hf_python: torch + transformers) and once with that import line changed to `from loom import`
(under --loom_python: the loom package installed). Model: the tiny Qwen3 of
tests/fixtures/sft/tiny_qwen3 (1 layer x 32, vocabulary 603, its tokenizer) or --model; data: a
generated text file of --lines lines; --max_steps steps of --batch x --block_size tokens, no
checkpoints, no evaluation. loom trains on its default device (lazy) and transformers on the
CPU (there is no GPU).

Each side at its best set-up, in its own process only: --threads threads (OMP_NUM_THREADS and
MKL_NUM_THREADS; torch takes its intra-op threads from OMP_NUM_THREADS), OMP_WAIT_POLICY=PASSIVE
(both: see env_for), and for the PyTorch side OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset, as
bench/peer_common.py does. Rounds alternate which side runs first. Per round: the process's wall
time and train_results.json's train_runtime (the Trainer's own clock: the training loop only),
the 1-minute load average before each run. Printed: a table per round and the medians of the
per-round ratios (transformers / loom: > 1 means loom is faster), and the first logged losses
of both (they differ: the sampler's shuffle and the initial state are each library's own).

Usage:
  /work/main/.venv/bin/python bench/python_run_clm.py --hf_python /tmp/trlvenv/bin/python \\
      [--rounds 5] [--max_steps 100] [--threads 2] [--json OUT.json]
--loom_python defaults to this interpreter (it must `import loom`).
"""
import argparse
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "python" / "run_clm.py"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--loom_python", default=sys.executable)
    p.add_argument("--hf_python", default="/tmp/trlvenv/bin/python")
    p.add_argument("--model", default=str(ROOT / "tests" / "fixtures" / "sft" / "tiny_qwen3"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--max_steps", type=int, default=100)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--block_size", type=int, default=64)
    p.add_argument("--lines", type=int, default=4000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json", help="also write every round's numbers here")
    return p.parse_args()


def write_corpus(path, lines):
    """A deterministic English-like text (the tokenizer's vocabulary is small)."""
    words = ("the quick brown fox jumps over a lazy dog while it is raining in the old town "
             "and every child that runs home sings a song about the sea").split()
    with open(path, "w", encoding="utf-8") as f:
        for i in range(lines):
            n = 8 + (i * 7) % 13
            f.write(" ".join(words[(i * 3 + 5 * j) % len(words)] for j in range(n)) + ".\n")


def loom_script(work):
    text = SCRIPT.read_text(encoding="utf-8")
    assert text.count("from transformers import") == 1, SCRIPT
    path = work / "run_clm_loom.py"
    path.write_text(text.replace("from transformers import", "from loom import"),
                    encoding="utf-8")
    return path


def env_for(side, threads):
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(threads)
    # Both: OpenMP threads that sleep at a barrier instead of spinning. On a loaded machine
    # (more runnable threads than cores) spinning costs loom 50x on this model (2026-12-08,
    # load 10: 1.0 vs 50 steps/s); unloaded it changes little.
    env["OMP_WAIT_POLICY"] = "PASSIVE"
    if side == "transformers":  # the rest of bench/peer_common.py's setup(), its process only
        env.pop("OPENBLAS_CORETYPE", None)
        env.pop("OPENBLAS_L2_SIZE", None)
        env["TOKENIZERS_PARALLELISM"] = "false"
    return env


def run_once(side, python, script, argv, out, threads):
    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.run([python, str(script), *argv, "--output_dir", str(out)],
                          env=env_for(side, threads), capture_output=True, text=True,
                          cwd=str(out.parent))
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"python_run_clm: the {side} run failed ({proc.returncode}):\n"
                 f"{proc.stderr[-3000:]}")
    results = json.loads((out / "train_results.json").read_text())
    state = json.loads((out / "trainer_state.json").read_text())
    losses = [h["loss"] for h in state["log_history"] if "loss" in h]
    return {"wall_s": wall, "train_runtime_s": results["train_runtime"], "load1": load,
            "first_losses": losses[:3], "last_loss": losses[-1] if losses else None}


def versions(python, code):
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else "?"


def cpu_model():
    for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def main():
    a = parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="loom-run-clm-bench."))
    corpus = work / "corpus.txt"
    write_corpus(corpus, a.lines)
    scripts = {"loom": loom_script(work), "transformers": SCRIPT}
    pythons = {"loom": a.loom_python, "transformers": a.hf_python}
    argv = ["--model_name_or_path", a.model, "--train_file", str(corpus),
            "--block_size", str(a.block_size), "--do_train", "true",
            "--max_steps", str(a.max_steps), "--per_device_train_batch_size", str(a.batch),
            "--learning_rate", "5e-4", "--logging_steps", "10", "--save_strategy", "no",
            "--report_to", "none", "--disable_tqdm", "true", "--seed", "0"]
    print(f"lscpu: {cpu_model()}; nproc {os.cpu_count()}; threads {a.threads}; "
          f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("loom:", versions(a.loom_python, "import loom; print(loom.__version__)"),
          "| torch, transformers:",
          versions(a.hf_python, "import torch, transformers; "
                                "print(torch.__version__, transformers.__version__)"))
    print(f"run_clm: {a.max_steps} steps x {a.batch} x {a.block_size} tokens, {a.model}")
    rounds = []
    print("%5s %-12s %9s %9s %7s   %-12s %9s %9s %7s   %7s %7s" % (
        "round", "first", "wall s", "train s", "load1", "second", "wall s", "train s", "load1",
        "wall x", "train x"))
    for r in range(a.rounds):
        order = ("loom", "transformers") if r % 2 == 0 else ("transformers", "loom")
        got = {}
        for side in order:
            got[side] = run_once(side, pythons[side], scripts[side], argv, work / f"{side}{r}",
                                 a.threads)
        wall_x = got["transformers"]["wall_s"] / got["loom"]["wall_s"]
        train_x = got["transformers"]["train_runtime_s"] / got["loom"]["train_runtime_s"]
        rounds.append({"order": order, **got, "wall_x": wall_x, "train_x": train_x})
        f, s = got[order[0]], got[order[1]]
        print("%5d %-12s %9.2f %9.2f %7.2f   %-12s %9.2f %9.2f %7.2f   %6.2fx %6.2fx" % (
            r, order[0], f["wall_s"], f["train_runtime_s"], f["load1"], order[1], s["wall_s"],
            s["train_runtime_s"], s["load1"], wall_x, train_x))
    med = {k: statistics.median(x[k] for x in rounds) for k in ("wall_x", "train_x")}
    for side in ("loom", "transformers"):
        print(f"{side}: median wall {statistics.median(x[side]['wall_s'] for x in rounds):.2f} s, "
              f"train_runtime {statistics.median(x[side]['train_runtime_s'] for x in rounds):.2f} s"
              f"; first losses {rounds[0][side]['first_losses']}")
    each = {k: ", ".join("%.2f" % x[k] for x in rounds) for k in ("wall_x", "train_x")}
    print(f"transformers / loom, median of per-round ratios: whole script {med['wall_x']:.2f}x "
          f"({each['wall_x']}), training loop {med['train_x']:.2f}x ({each['train_x']})")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"args": vars(a), "rounds": rounds, "median": med}, f, indent=1)


if __name__ == "__main__":
    main()
