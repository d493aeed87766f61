#!/usr/bin/env python3
"""Summary of bench/compare.sh's logs: <dir>/<job>.<round>.log.

For each step job, each implementation's median ms/step over the rounds and
the median of the per-round ratios implementation ms / loom lazy ms (> 1:
loom is faster), with every round's ratio; the roofline's fraction of the
measured GEMM peak and the time outside GEMMs (bench/roofline.h) per round;
for bf16 / bert_bf16, loom's speed-up over its own fp32 step of the same
round (demo / bert). For finetune, loom's / the HF Trainer's train
samples/s and both accuracies. Writes <dir>/results.tsv (job, round,
implementation, ms/step).

Usage: compare_summary.py DIR
"""
import glob
import os
import re
import statistics
import sys

LOOM = "loom lazy"
JOB_ORDER = ["demo", "gpt2", "bert", "bf16", "bert_bf16", "finetune"]  # a bf16 job after its fp32
ROOFLINE = re.compile(r"roofline \(loom lazy\): model ([\d.]+) GFLOP/step .*?([\d.]+) GFLOP/s = "
                      r"([\d.]+)% of the GEMM peak")
OUTSIDE = re.compile(r"outside GEMMs ([\d.]+)")
FINETUNE = re.compile(r"loom / HF Trainer train samples/s: ([\d.]+)x")
ACCURACY = re.compile(r"^(loom train|HF Trainer)\s+[\d.]+\s+([\d.]+)\s+([\d.]+)")


def parse_table(text):
    """{implementation: ms/step} from the step bench's result table."""
    rows, inside = {}, False
    for line in text.splitlines():
        if line.startswith("implementation"):
            inside = True
            continue
        if inside:
            if not line.strip() or line.startswith("ratio_"):
                break
            fields = line[22:].split()
            try:
                rows[line[:22].strip()] = float(fields[0])
            except (IndexError, ValueError):
                pass
    return rows


def load(directory):
    """{job: {round: text}}."""
    logs = {}
    for path in glob.glob(os.path.join(directory, "*.*.log")):
        job, rnd = os.path.basename(path)[:-4].rsplit(".", 1)
        logs.setdefault(job, {})[int(rnd)] = open(path, errors="replace").read()
    return logs


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def loom_row(rows):
    """loom's lazy cpu column: "loom lazy", or "loom lazy bf16" in a bf16 job."""
    return next((n for n in rows if n.startswith(LOOM) and ":" not in n), None)


def normalized(rows):
    """The table with loom's row renamed LOOM, so ratios and bf16 pair up."""
    name = loom_row(rows)
    return {(LOOM if n == name else n): ms for n, ms in rows.items()}


def summarize_step_job(job, rounds, tsv):
    tables = {r: normalized(parse_table(t)) for r, t in sorted(rounds.items())}
    for r, rows in tables.items():
        for name, ms in rows.items():
            tsv.append(f"{job}\t{r}\t{name}\t{ms}")
    names = []
    for rows in tables.values():
        names += [n for n in rows if n not in names]
    print(f"\n{job}: {len(tables)} rounds")
    print(f"  {'implementation':22s} {'median ms':>10s}  {'x loom (median of rounds)':>26s}  rounds")
    for name in names:
        ms = [rows[name] for rows in tables.values() if name in rows]
        ratios = [rows[name] / rows[LOOM] for rows in tables.values()
                  if name in rows and LOOM in rows and rows[LOOM] > 0]
        each = ", ".join(f"{x:.2f}" for x in ratios)
        shown = f"{med(ratios):.2f}x" if name != LOOM and ratios else ""
        print(f"  {name:22s} {med(ms):10.1f}  {shown:>26s}  {each if name != LOOM else ''}")
    fractions, outside = [], []
    for text in rounds.values():
        if m := ROOFLINE.search(text):
            fractions.append(float(m.group(3)))
        if m := OUTSIDE.search(text):
            outside.append(float(m.group(1)))
    if fractions:
        print(f"  roofline: median {med(fractions):.1f}% of the measured fp32 GEMM peak "
              f"(rounds: {', '.join(f'{x:.1f}' for x in fractions)})" +
              (f"; time outside GEMMs median {med(outside):.1f} ms/step" if outside else ""))
    return tables


def summarize_bf16(job, tables, fp32_tables):
    ratios = [fp32_tables[r][LOOM] / rows[LOOM] for r, rows in tables.items()
              if r in fp32_tables and LOOM in rows and LOOM in fp32_tables[r]]
    if ratios:
        print(f"  loom bf16 speed-up over loom fp32 of the same round: median {med(ratios):.2f}x "
              f"(rounds: {', '.join(f'{x:.2f}' for x in ratios)})")


def summarize_finetune(rounds):
    ratios = []
    print(f"\nfinetune: {len(rounds)} rounds")
    for r, text in sorted(rounds.items()):
        if m := FINETUNE.search(text):
            ratios.append(float(m.group(1)))
        acc = {m.group(1): m.group(3) for line in text.splitlines()
               if (m := ACCURACY.match(line))}
        print(f"  round {r}: loom / HF Trainer {ratios[-1] if ratios else float('nan'):.2f}x, "
              f"accuracy loom {acc.get('loom train', '?')} HF {acc.get('HF Trainer', '?')}")
    print(f"  median of per-round ratios: {med(ratios):.2f}x")


def main():
    directory = sys.argv[1]
    logs = load(directory)
    tsv, tables = ["job\tround\timplementation\tms_per_step"], {}
    for job in sorted(logs, key=lambda j: JOB_ORDER.index(j) if j in JOB_ORDER else 99):
        if job == "finetune":
            summarize_finetune(logs[job])
            continue
        tables[job] = summarize_step_job(job, logs[job], tsv)
        base = {"bf16": "demo", "bert_bf16": "bert"}.get(job)
        if base in tables:
            summarize_bf16(job, tables[job], tables[base])
    with open(os.path.join(directory, "results.tsv"), "w") as f:
        f.write("\n".join(tsv) + "\n")


if __name__ == "__main__":
    main()
