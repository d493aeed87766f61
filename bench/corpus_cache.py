#!/usr/bin/env python3
"""Corpora bigger than memory (docs/data.md, "the token cache"): peak RSS and start-up of
`loom train` with the demo model (scripts/demo.sh's GPT-2: 4 layers, 256 wide, 128-token
blocks, 10 % validation split) on text files of different sizes, first with an empty token
cache (the streaming tokenize pass; its MB/s as loom prints it) and then again (a cache hit),
and the `tokenizers` peer (bench/corpus_tokenize_peer.py) on the first MAX_MB of the largest
file with the same number of threads.

Usage: corpus_cache.py LOOM_BINARY CACHE_DIR TEXT_FILE... [--steps N] [--peer-mb MB]
Prints one line per run: file size, cold/hit, peak RSS (ru_maxrss of the loom process),
seconds to the plan line ("loom train: ...", printed once the data and model are ready:
the start-up), total seconds, and loom's "[data]" lines. Record `uptime` beside it.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_loom(loom, text, cache, steps, out_dir):
    args = [loom, "train", "--task", "causal-lm", "--model_type", "gpt2",
            "--config_overrides",
            "n_layer=4,n_embd=256,n_head=4,n_positions=128,resid_pdrop=0,embd_pdrop=0,attn_pdrop=0",
            "--tokenizer_name", os.path.join(ROOT, "assets/tokenizers/gpt2"),
            "--train_file", text, "--validation_split_percentage", "10", "--block_size", "128",
            "--max_eval_samples", "16", "--do_eval", "--output_dir", out_dir,
            "--overwrite_output_dir", "--device", "lazy", "--seed", "42",
            "--per_device_train_batch_size", "8", "--per_device_eval_batch_size", "16",
            "--max_steps", str(steps), "--save_strategy", "no", "--disable_tqdm",
            "--report_to", "none"]
    env = dict(os.environ, LOOM_DATASETS_CACHE=cache)
    t0 = time.perf_counter()
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                         text=True)
    plan_s, data_lines = None, []
    for line in p.stdout:
        if line.startswith("[data]"):
            data_lines.append(line.strip())
        if plan_s is None and line.startswith("loom train:"):
            plan_s = time.perf_counter() - t0
    _, status, usage = os.wait4(p.pid, 0)
    total = time.perf_counter() - t0
    if status != 0:
        sys.exit(f"loom train failed on {text} (status {status})")
    return usage.ru_maxrss / 1024.0, plan_s, total, data_lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("loom")
    ap.add_argument("cache")
    ap.add_argument("texts", nargs="+")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--peer-mb", type=float, default=100)
    a = ap.parse_args()
    out_dir = os.path.join(a.cache, "out")
    for text in a.texts:
        mb = os.path.getsize(text) / 1e6
        for kind in ("cold", "hit"):
            if kind == "cold":
                for f in os.listdir(a.cache) if os.path.isdir(a.cache) else []:
                    if f.startswith(os.path.basename(text) + "-"):
                        os.remove(os.path.join(a.cache, f))
            rss, plan_s, total, data = run_loom(a.loom, text, a.cache, a.steps, out_dir)
            print(json.dumps(dict(file_mb=round(mb, 1), cache=kind, peak_rss_mb=round(rss, 1),
                                  startup_s=round(plan_s, 2), total_s=round(total, 1),
                                  data=data)), flush=True)
    peer = os.path.join(ROOT, "bench/corpus_tokenize_peer.py")
    tok = os.path.join(ROOT, "tests/fixtures/tokenizers/gpt2/tokenizer.json")
    threads = str(os.cpu_count())
    env = dict(os.environ, RAYON_NUM_THREADS=threads, TOKENIZERS_PARALLELISM="true")
    res = subprocess.run([sys.executable, peer, tok, a.texts[-1], str(a.peer_mb)], env=env,
                         capture_output=True, text=True, check=True)
    print("tokenizers peer:", res.stdout.strip(), flush=True)
    shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
