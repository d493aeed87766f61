#!/usr/bin/env python3
"""One line of bench/fsdp_step.sh's report for a finished 2-rank `loom train`.

  fsdp_report.py MODEL MODE OUT STEPS T1 TN LOAD [ROUND TSV]

OUT holds the run (OUT/run/lazy_metrics.json: TrainPeakRssBytes, rank 0's
high-water mark at the end of the training loop, before the final gathers and
save), its log (OUT/log: the "N.NM parameters" line) and one GNU time file per
rank (OUT/rss.R, KiB: the whole run, the final save included). TN is the
train_runtime of the 1 + STEPS steps; T1 (bench/fsdp_step.sh passes 0) that
of a 1-step run; the step time is the median of rank 0's TrainStepTime,
else (TN - T1) / STEPS. The collective bytes are rank 0's counters over the
run divided by 1 + STEPS (so they include the start-up's parameter fill and,
for full_shard, the final gathers), against the theory for N parameters: DDP
all_reduce 4N, ZeRO-2 reduce_scatter 4N + all_gather 4N, ZeRO-3 as ZeRO-2 plus
about 4N regathered for backward. With ROUND and TSV, the line is also
appended to TSV for bench/fsdp_summary.py (model, round, "loom", mode,
training peak MiB, step ms, tokens/s).
"""
import glob
import json
import re
import sys


def main():
    model, mode, out, steps, t1, tn, load = sys.argv[1:8]
    round_, tsv = (sys.argv[8:10] + [None, None])[:2]
    steps = int(steps)
    counters = json.load(open(f"{out}/run/lazy_metrics.json"))["counters"]
    rss = [int(open(p).read().split()[-1]) / 1024 for p in sorted(glob.glob(f"{out}/rss.*"))]
    train_peak = counters.get("TrainPeakRssBytes", 0) / 2**20  # rank 0, before the final save
    found = re.search(r"([0-9.]+)M parameters", open(f"{out}/log").read())
    n = float(found.group(1)) * 1e6 if found else 0.0
    theory = {"ddp": 4 * n, "shard_grad_op": 8 * n, "full_shard": 12 * n}[mode]
    moved = sum(counters.get(k, 0) for k in ("AllReduceBytes", "ReduceScatterBytes",
                                             "AllGatherBytes")) / (steps + 1)
    timers = json.load(open(f"{out}/run/lazy_metrics.json"))["timers"]
    if "TrainStepTime" in timers:  # rank 0's median step-to-step wall time
        step_ms = timers["TrainStepTime"]["percentiles"]["50%"] / 1e6
    else:
        step_ms = 1000 * (float(tn) - float(t1)) / steps
    print(f"loom  {model:6s} {mode:14s} training peak RSS (rank 0) {train_peak:5.0f} MiB, whole run "
          f"{' / '.join(f'{r:.0f}' for r in rss)} MiB  step {step_ms:7.0f} ms  "
          f"{2 * 128 / (step_ms / 1000):6.0f} tokens/s  collective bytes/step "
          f"{moved / 2**20:7.1f} MiB (theory {theory / 2**20:7.1f})  load {load}", flush=True)
    if tsv:
        with open(tsv, "a") as f:
            f.write(f"{model}\t{round_}\tloom\t{mode}\t{train_peak:.0f}\t{step_ms:.1f}\t"
                    f"{2 * 128 / (step_ms / 1000):.1f}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
