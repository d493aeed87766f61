#!/usr/bin/env python3
"""Reads event files written by loom with TensorBoard's own reader
(tensorboard's EventAccumulator) and checks them against the run's
trainer_state.json.

Assumes PyPI tensorboard (pip install tensorboard) and a built `loom` CLI.

  python3 tools/check_tensorboard.py [--build build]       # a tiny run, trained here
  python3 tools/check_tensorboard.py --run out/gpt2_austen # an existing run (the demo)

Either way it prints the result; with --write it also writes it to the
committed tests/fixtures/tensorboard/check_result.txt (--run:
check_result_<name>.txt), so a check run from the docs changes no file.

Steps: without --run, trains a tiny GPT-2 (2 layers, width 16) from scratch
on the first lines of Pride and Prejudice on the lazy device for 6 steps with
`loom train --report_to tensorboard`, logging every step, evaluating every 3.
Then EventAccumulator loads OUTPUT_DIR/runs/<run>; every scalar of every
log_history entry must be there under transformers' TensorBoardCallback tag
(eval_x -> eval/x, else train/x) at its step with its value (as float32), the
lazy/ scalars must be there, and the "args" text summary. Finally a copy of
the event file cut inside its last record must still load, with every record
but that one (TensorBoard skips a truncated last record).
"""
import argparse
import json
import pathlib
import shutil
import struct
import subprocess
import sys
import tempfile

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "tensorboard"
LAZY_TAGS = ("lazy/CompileTime", "lazy/ExecuteTime", "lazy/UncachedCompile")


def f32(v):
    return struct.unpack("f", struct.pack("f", v))[0]


def tag_of(key):
    if key.startswith("eval_"):
        return "eval/" + key[5:]
    if key.startswith("test_"):
        return "test/" + key[5:]
    return "train/" + key


def train_tiny(loom, work):
    corpus = work / "tiny.txt"
    lines = (ROOT / "assets/corpora/austen/prideprejudice.txt").read_text().splitlines()[:150]
    corpus.write_text("\n".join(lines) + "\n")
    out = work / "out"
    cmd = [str(loom), "train", "--model_type", "gpt2", "--config_overrides",
           "n_layer=2,n_embd=16,n_head=2,n_positions=32", "--tokenizer_name",
           str(ROOT / "assets/tokenizers/gpt2"), "--train_file", str(corpus),
           "--validation_split_percentage", "20", "--block_size", "16", "--output_dir", str(out),
           "--per_device_train_batch_size", "2", "--max_steps", "6", "--logging_steps", "1",
           "--eval_strategy", "steps", "--eval_steps", "3", "--save_strategy", "no",
           "--device", "lazy", "--disable_tqdm", "--report_to", "tensorboard"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return out


def load(logdir):
    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    return acc


def check_run(out):
    """Returns (ok, report lines) for the newest run under out/runs."""
    lines, ok = [], True
    args = json.loads((out / "training_args.json").read_text())
    logdir = pathlib.Path(args["logging_dir"])
    files = sorted(logdir.glob("events.out.tfevents.*"))
    lines.append(f"event files in {logdir.name}: {len(files)}")
    if len(files) != 1:
        return False, lines
    acc = load(logdir)
    tags = acc.Tags()
    scalars = {t: {e.step: e.value for e in acc.Scalars(t)} for t in tags["scalars"]}
    state = json.loads((out / "trainer_state.json").read_text())
    checked = bad = 0
    for entry in state["log_history"]:
        step = entry["step"]
        for key, value in entry.items():
            if key == "step":
                continue
            got = scalars.get(tag_of(key), {}).get(step)
            checked += 1
            if got is None or got != f32(value):
                bad += 1
                lines.append(f"MISMATCH {tag_of(key)} at step {step}: {got} != {value}")
    lines.append(f"scalar tags: {len(scalars)}; log_history values checked: {checked}, mismatched: {bad}")
    ok &= bad == 0 and checked > 0
    for tag in ("train/loss", "train/learning_rate", "train/grad_norm", "eval/loss",
                "eval/perplexity") + LAZY_TAGS:
        present = tag in scalars
        ok &= present
        first = min(scalars[tag]) if present else None
        lines.append(f"  {tag}: {'%d points' % len(scalars[tag]) if present else 'MISSING'}"
                     + (f", step {first} = {scalars[tag][first]:.6g}" if present else ""))
    text_ok = "args/text_summary" in tags.get("tensors", [])
    lines.append(f"text summary args/text_summary: {'present' if text_ok else 'MISSING'}")
    ok &= text_ok
    return ok & check_truncated(files[0], lines), lines


def count_events(acc):
    tags = acc.Tags()
    return (sum(len(acc.Scalars(t)) for t in tags["scalars"])
            + sum(len(acc.Tensors(t)) for t in tags["tensors"]))


def check_truncated(event_file, lines):
    data = event_file.read_bytes()
    # The last record: walk the framing (uint64 length, 4, data, 4).
    pos, starts = 0, []
    while pos < len(data):
        starts.append(pos)
        pos += 16 + struct.unpack("<Q", data[pos:pos + 8])[0]
    with tempfile.TemporaryDirectory() as tmp:
        cut = pathlib.Path(tmp) / event_file.name
        cut.write_bytes(data[:starts[-1] + 10])
        whole, kept = count_events(load(event_file.parent)), count_events(load(tmp))
    ok = kept == whole - 1
    lines.append(f"truncated copy (cut inside the last of {len(starts)} records): "
                 f"{kept} of {whole} summary events read {'(ok)' if ok else '(WRONG)'}")
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build", help="loom build directory (holds loom)")
    parser.add_argument("--run", help="an existing `loom train` output_dir to check instead")
    parser.add_argument("--write", action="store_true",
                        help="also write the result to its committed file in tests/fixtures/")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.run:
            out, result = pathlib.Path(args.run), FIXTURES / f"check_result_{pathlib.Path(args.run).name}.txt"
            what = f"run {args.run}"
        else:
            out, result = train_tiny(ROOT / args.build / "loom", pathlib.Path(tmp)), FIXTURES / "check_result.txt"
            what = "tiny GPT-2 run, 6 steps, lazy device"
        ok, lines = check_run(out)
    import tensorboard
    text = "\n".join([f"check_tensorboard.py: {what}; tensorboard {tensorboard.__version__} "
                      "EventAccumulator", *lines, "PASS" if ok else "FAIL"]) + "\n"
    print(text, end="")
    if args.write:
        result.write_text(text)
        print(f"wrote {result.relative_to(ROOT)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
