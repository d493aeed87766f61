#!/usr/bin/env python3
"""Writes tests/fixtures/sft/trl_losses_ga_packed.json: TRL's SFTTrainer losses on the shipped
tiny Qwen3 (tests/fixtures/sft/tiny_qwen3, written by tools/make_sft_fixtures.py) and the 8
conversations of loss_rows.jsonl, for the loss over the optimizer step's tokens and for packing:

- "ga2": per_device_train_batch_size 4 x gradient_accumulation_steps 2 (transformers' Trainer
  divides each micro-batch's summed token loss by num_items_in_batch, the target tokens of the
  whole step, labels[..., 1:] != -100; the micro-batches hold uneven counts);
- "packed": packing=True (BFD, padding-free: TRL flattens the batch into one row with position
  ids restarting per sequence, transformers' attention masks each sequence), batch 8.

Every step holds all 8 conversations (one row per step for packed), so the sampler's order cannot
matter; the rest as trl_losses.json: assistant-only loss, max_length 64, AdamW lr 1e-2, linear
schedule, max_grad_norm 1, 12 steps, dropout 0.

Usage (torch CPU, trl, transformers, datasets; see tools/make_sft_fixtures.py):
  /tmp/trlvenv/bin/python tools/make_sft_loss_fixtures.py
Written with trl 1.16.0, transformers 5.24.0, torch 2.15.0.
"""
import json
import os
import tempfile

import torch
import transformers
import trl
from datasets import Dataset
from transformers import AutoTokenizer, Qwen3ForCausalLM
from trl import SFTConfig, SFTTrainer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "sft")


def losses(**fields):
    model_dir = os.path.join(OUT, "tiny_qwen3")
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = Qwen3ForCausalLM.from_pretrained(model_dir, attn_implementation="sdpa")
    with open(os.path.join(OUT, "loss_rows.jsonl"), encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        args = SFTConfig(output_dir=tmp, report_to=[], use_cpu=True, bf16=False, max_steps=12,
                         learning_rate=1e-2, logging_steps=1, save_strategy="no",
                         assistant_only_loss=True, max_length=64, seed=42,
                         chat_template_path=os.path.join(OUT, "chatml_generation.jinja"), **fields)
        trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows),
                             processing_class=tok)
        trainer.train()
        return [e["loss"] for e in trainer.state.log_history if "loss" in e]


def main():
    torch.manual_seed(0)
    out = {"trl": trl.__version__, "transformers": transformers.__version__,
           "ga2": {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2,
                   "losses": losses(per_device_train_batch_size=4, gradient_accumulation_steps=2)},
           "packed": {"per_device_train_batch_size": 8, "packing": True,
                      "losses": losses(per_device_train_batch_size=8, packing=True)}}
    with open(os.path.join(OUT, "trl_losses_ga_packed.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
