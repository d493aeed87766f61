#!/usr/bin/env python3
"""The summary of bench/fsdp_step.sh's alternating rounds.

  fsdp_summary.py TSV                               print the summary
  fsdp_summary.py --peer MODEL ROUND MODE LOG TSV   append a torch peer's run

TSV rows: model, round, engine (loom | torch), mode, training peak MiB (loom:
rank 0's TrainPeakRssBytes; torch: rank 0's ru_maxrss), step ms, tokens/s.
Per model and configuration the medians over rounds; then, per model, the
median over rounds of the per-round ratios the issue's goals name (issue 22:
full_shard's training peak <= 0.6x DDP's, its step <= 1.2x DDP's, its tokens/s
>= 1.3x torch FSDP2's). A ratio is taken only within a round, where both runs
met the same machine load; the median of those is steadier than a ratio of
medians on a shared machine.
"""
import collections
import re
import statistics
import sys


def append_peer(model, round_, mode, log, tsv):
    for line in open(log):
        m = re.search(r"rank 0: .*step (\d+) ms .* (\d+) tokens/s .*peak RSS (\d+) MiB", line)
        if m:
            step, tok, rss = m.groups()
            with open(tsv, "a") as f:
                f.write(f"{model}\t{round_}\ttorch\t{mode}\t{rss}\t{step}\t{tok}\n")
            return 0
    print(f"fsdp_summary: no rank-0 line from torch {mode} in {log}", file=sys.stderr)
    return 0


def summarize(tsv):
    runs = collections.defaultdict(dict)  # (model, round) -> (engine, mode) -> (peak, ms, tok)
    for line in open(tsv):
        model, round_, engine, mode, peak, ms, tok = line.split("\t")
        runs[(model, int(round_))][(engine, mode)] = (float(peak), float(ms), float(tok))
    models = sorted({m for m, _ in runs})
    for model in models:
        rounds = [r for (m, r) in sorted(runs) if m == model]
        configs = sorted({c for r in rounds for c in runs[(model, r)]})
        print(f"\n{model}: medians over {len(rounds)} alternating rounds")
        print(f"  {'run':22s} {'training peak MiB':>18s} {'step ms':>9s} {'tokens/s':>9s}")
        for c in configs:
            vals = [runs[(model, r)][c] for r in rounds if c in runs[(model, r)]]
            med = [statistics.median(v[i] for v in vals) for i in range(3)]
            print(f"  {c[0] + ' ' + c[1]:22s} {med[0]:18.0f} {med[1]:9.0f} {med[2]:9.1f}")
        goals = [("full_shard peak / DDP peak (goal <= 0.6)", ("loom", "full_shard"),
                  ("loom", "ddp"), 0),
                 ("full_shard step / DDP step (goal <= 1.2)", ("loom", "full_shard"),
                  ("loom", "ddp"), 1),
                 ("full_shard tokens/s / torch FSDP2's (goal >= 1.3)", ("loom", "full_shard"),
                  ("torch", "fsdp"), 2)]
        for name, a, b, i in goals:
            ratios = [runs[(model, r)][a][i] / runs[(model, r)][b][i] for r in rounds
                      if a in runs[(model, r)] and b in runs[(model, r)]
                      and runs[(model, r)][b][i] > 0]
            if ratios:
                print(f"  {name}: median {statistics.median(ratios):.3f} "
                      f"(rounds: {', '.join(f'{x:.3f}' for x in ratios)})")
    return 0


def main():
    if len(sys.argv) == 7 and sys.argv[1] == "--peer":
        return append_peer(*sys.argv[2:])
    if len(sys.argv) == 2:
        return summarize(sys.argv[1])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
