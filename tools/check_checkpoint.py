#!/usr/bin/env python3
"""A loom Trainer checkpoint loads in Hugging Face transformers.

Assumes PyPI torch + transformers and a built loom_tests binary.

  python3 tools/check_checkpoint.py [--build build]   # prints the result
  python3 tools/check_checkpoint.py --write   # and writes tests/fixtures/checkpoint_result.txt (committed)

Runs `<build>/loom_tests --gtest_filter=TrainerCheckpointExport.ForTransformers`
with LOOM_EXPORT_CHECKPOINT set to a temporary directory (a tiny GPT-2 trained
two steps by loom's Trainer, checkpoint-2 saved), then loads checkpoint-2 with
transformers: the model (GPT2LMHeadModel.from_pretrained, no missing or
unexpected keys), the tokenizer (AutoTokenizer.from_pretrained), the trainer
state (TrainerState.load_from_json: global_step 2, log_history entries) and
training_args.json (JSON with transformers' argument names).
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import torch
import transformers

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULT = ROOT / "tests" / "fixtures" / "checkpoint_result.txt"


def check(ckpt):
    lines = []
    model, info = transformers.GPT2LMHeadModel.from_pretrained(ckpt, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    lines.append(f"model: {type(model).__name__}, {sum(p.numel() for p in model.parameters())} "
                 "parameters, no missing or unexpected keys")
    tok = transformers.AutoTokenizer.from_pretrained(ckpt)
    ids = tok("It is a truth universally acknowledged")["input_ids"]
    lines.append(f"tokenizer: {type(tok).__name__}, 'It is a truth universally acknowledged' -> {ids}")
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits
    assert torch.isfinite(logits).all()
    lines.append(f"forward: logits {list(logits.shape)}, finite")
    state = transformers.TrainerState.load_from_json(os.path.join(ckpt, "trainer_state.json"))
    assert state.global_step == 2, state.global_step
    lines.append(f"trainer_state: global_step {state.global_step}, epoch {state.epoch}, "
                 f"{len(state.log_history)} log_history entries")
    args = json.load(open(os.path.join(ckpt, "training_args.json")))
    known = set(transformers.TrainingArguments.__dataclass_fields__)
    unknown = sorted(k for k in args if k not in known and k != "device")
    lines.append(f"training_args.json: {len(args)} fields, not transformers' names: {unknown}")
    return lines


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="build")
    p.add_argument("--write", action="store_true",
                   help="also write the result to its committed file in tests/fixtures/")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, LOOM_EXPORT_CHECKPOINT=out)
        subprocess.run([str(ROOT / a.build / "loom_tests"),
                        "--gtest_filter=TrainerCheckpointExport.ForTransformers"],
                       env=env, check=True, stdout=subprocess.DEVNULL)
        lines = check(os.path.join(out, "checkpoint-2"))
    text = (f"# tools/check_checkpoint.py with torch {torch.__version__}, "
            f"transformers {transformers.__version__}\n" + "\n".join(lines) + "\nOK\n")
    if a.write:
        RESULT.write_text(text)
        print(f"wrote {RESULT.relative_to(ROOT)}")
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
