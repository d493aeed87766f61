#!/usr/bin/env python3
"""Checks that a checkpoint written by loom's Trainer loads in Hugging Face
transformers: config.json (AutoConfig), model.safetensors
(GPT2LMHeadModel.from_pretrained, no missing or unexpected keys), the
tokenizer (AutoTokenizer) and trainer_state.json (TrainerState.load_from_json),
and that the loaded model's logits equal those of loom's weights read
directly. Writes the report to tests/train/fixtures/checkpoint_in_transformers.txt.

Assumes a built loom_tests (its TrainerCheckpointExport.ForTransformers test
writes the checkpoint) and torch + transformers from PyPI.

  python3 tests/train/check_checkpoint_in_transformers.py build/loom_tests          # prints
  python3 tests/train/check_checkpoint_in_transformers.py build/loom_tests --write  # and writes
                                             # the committed fixtures/checkpoint_in_transformers.txt
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import torch
import transformers
from safetensors.torch import load_file
from transformers import AutoConfig, AutoTokenizer, GPT2LMHeadModel
from transformers.trainer_callback import TrainerState

ROOT = pathlib.Path(__file__).resolve().parent
OUT = ROOT / "fixtures" / "checkpoint_in_transformers.txt"


def main():
    write = "--write" in sys.argv[1:]
    positional = [a for a in sys.argv[1:] if a != "--write"]
    tests = positional[0] if positional else "build/loom_tests"
    out = tempfile.mkdtemp(prefix="loom_export_")
    env = dict(os.environ, LOOM_EXPORT_CHECKPOINT=out)
    subprocess.run([tests, "--gtest_filter=TrainerCheckpointExport.ForTransformers"], env=env,
                   check=True, stdout=subprocess.DEVNULL)
    ckpt = os.path.join(out, "checkpoint-2")
    lines = [f"transformers {transformers.__version__}, torch {torch.__version__}",
             f"files: {sorted(os.listdir(ckpt))}"]
    config = AutoConfig.from_pretrained(ckpt)
    lines.append(f"AutoConfig: {type(config).__name__} model_type={config.model_type} "
                 f"n_layer={config.n_layer} n_embd={config.n_embd} vocab_size={config.vocab_size}")
    model, info = GPT2LMHeadModel.from_pretrained(ckpt, output_loading_info=True)
    lines.append(f"GPT2LMHeadModel.from_pretrained: missing={info['missing_keys']} "
                 f"unexpected={info['unexpected_keys']} mismatched={info['mismatched_keys']}")
    raw = load_file(os.path.join(ckpt, "model.safetensors"))
    same = all(torch.equal(model.state_dict()[k], v) for k, v in raw.items()
               if k in model.state_dict())
    lines.append(f"weights equal to the file: {same}")
    tok = AutoTokenizer.from_pretrained(ckpt)
    ids = tok("Pride and Prejudice")["input_ids"]
    lines.append(f"AutoTokenizer: {type(tok).__name__} ids={ids}")
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits
    lines.append(f"logits shape {list(logits.shape)} finite={bool(torch.isfinite(logits).all())}")
    state = TrainerState.load_from_json(os.path.join(ckpt, "trainer_state.json"))
    lines.append(f"TrainerState.load_from_json: global_step={state.global_step} "
                 f"epoch={state.epoch} max_steps={state.max_steps} "
                 f"log_history steps={[e['step'] for e in state.log_history]}")
    with open(os.path.join(ckpt, "training_args.json")) as f:
        targs = json.load(f)
    known = {f.name for f in __import__("dataclasses").fields(transformers.TrainingArguments)}
    lines.append(f"training_args.json keys not in transformers.TrainingArguments: "
                 f"{sorted(k for k in targs if k not in known)}")
    ok = not info["missing_keys"] and not info["unexpected_keys"] and same
    lines.append("OK" if ok else "FAILED")
    if write:
        OUT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
