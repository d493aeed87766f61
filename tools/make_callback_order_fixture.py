#!/usr/bin/env python3
"""Writes python/tests/fixtures/hf_callback_order.json: the events transformers' real Trainer
calls on a TrainerCallback, in order, with the state and control each one sees, for a few
TrainingArguments set-ups (logging / evaluation / save by steps and by epochs, gradient
accumulation, max_steps across an epoch boundary, a callback that stops training).
python/tests/test_callback_order.py runs loom.Trainer with the same arguments and rows and
asserts the same sequence.

The model is a tiny random GPT-2 (1 layer, 16 wide, vocabulary 64, no dropout) written beside
the fixture (python/tests/fixtures/tiny_gpt2/), so loom starts from the same weights. The rows
are pre-tokenized (12 tokens, written into the fixture; the training rows are copies of one
row) and collated by transformers' default_data_collator: no tokenizer is involved. Each case
records, per event, as the last callback (after DefaultFlowCallback, as a user's callback):
  event, global_step, epoch, max_steps, the five TrainerControl flags, and for on_log the
  sorted keys of `logs` and its values but the clock's (*_runtime, *_per_second), for
  on_evaluate / on_predict those of `metrics`; after training, a case may call evaluate()
  and predict() (marked by an entry {"event": "call evaluate"}).
on_prediction_step (one per evaluation batch) is recorded too; loom does not call it from
Python (docs/python.md).

Usage (torch CPU + transformers + datasets):
  /tmp/trlvenv/bin/python tools/make_callback_order_fixture.py
Written with transformers 5.24.0, torch 2.15.0.
"""
import json
import os
import tempfile

import torch
import transformers
from datasets import Dataset
from transformers import (GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback,
                          TrainingArguments)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "python", "tests", "fixtures")
OUT = os.path.join(FIXTURES, "hf_callback_order.json")
MODEL_DIR = os.path.join(FIXTURES, "tiny_gpt2")

# No dropout: both trainers then compute the same losses from the same weights.
MODEL_CONFIG = {"n_layer": 1, "n_embd": 16, "n_head": 2, "n_positions": 32, "vocab_size": 64,
                "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0, "bos_token_id": 0,
                "eos_token_id": 0}
# Logged values that depend on the clock, not on the training.
CLOCK_KEYS = ("_runtime", "_per_second")
FLAGS = ("should_training_stop", "should_epoch_stop", "should_save", "should_evaluate",
         "should_log")
EVENTS = ("on_init_end", "on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end",
          "on_step_begin", "on_pre_optimizer_step", "on_optimizer_step", "on_substep_end",
          "on_step_end", "on_evaluate", "on_predict", "on_save", "on_log", "on_prediction_step")

# The arguments both trainers get (besides output_dir, report_to, disable_tqdm, seed).
COMMON = {"per_device_train_batch_size": 2, "per_device_eval_batch_size": 2,
          "learning_rate": 1e-3, "lr_scheduler_type": "linear", "warmup_steps": 0}
CASES = [
    {"name": "steps_ga2_two_epochs", "train_rows": 12, "eval_rows": 4,
     "args": {"num_train_epochs": 2, "gradient_accumulation_steps": 2, "logging_steps": 2,
              "logging_first_step": True, "eval_strategy": "steps", "eval_steps": 3,
              "save_steps": 4}},
    {"name": "epoch_strategies", "train_rows": 8, "eval_rows": 4,
     "args": {"num_train_epochs": 2, "logging_strategy": "epoch", "eval_strategy": "epoch",
              "save_strategy": "epoch"}},
    {"name": "max_steps_past_an_epoch", "train_rows": 8, "eval_rows": 2,
     "args": {"max_steps": 6, "logging_steps": 1, "eval_strategy": "steps", "eval_steps": 4,
              "save_strategy": "no"}},
    # A callback before the recorder sets these flags at on_step_end of step 2.
    {"name": "callback_stops_at_step_2", "train_rows": 8, "eval_rows": 2,
     "stop_at": {"step": 2, "flags": {"should_training_stop": True, "should_evaluate": True,
                                      "should_save": True}},
     "args": {"num_train_epochs": 3, "logging_steps": 100, "save_strategy": "no"}},
    # 5 batches, accumulation 3: windows of 3 and 2; an evaluation before the first step.
    {"name": "ga3_remainder_eval_on_start", "train_rows": 10, "eval_rows": 2,
     "args": {"num_train_epochs": 1, "gradient_accumulation_steps": 3, "logging_steps": 1,
              "eval_on_start": True, "eval_strategy": "steps", "eval_steps": 2,
              "save_strategy": "no"}},
    # should_epoch_stop at step 1 of every epoch: each epoch is one step.
    {"name": "callback_stops_each_epoch", "train_rows": 8, "eval_rows": 2,
     "stop_at": {"step": -1, "flags": {"should_epoch_stop": True}},
     "args": {"num_train_epochs": 2, "logging_strategy": "epoch", "save_strategy": "no"}},
    # save_strategy "best": a checkpoint only when eval_loss improves; then evaluate() and
    # predict() after training.
    {"name": "save_best_then_evaluate_predict", "train_rows": 8, "eval_rows": 2,
     "after": ["evaluate", "predict"],
     "args": {"max_steps": 3, "logging_steps": 1, "eval_strategy": "steps", "eval_steps": 1,
              "save_strategy": "best", "metric_for_best_model": "eval_loss"}},
]


def rows(n, offset, same=False):
    """n pre-tokenized rows of 12 ids, a fixed pattern (no generator to agree on); same: n
    copies of one row, so that the losses do not depend on the sampler's order (loom's
    shuffle is not torch's). labels[0] is -100: the causal loss never predicts position 0,
    and so transformers' count of the step's target tokens (num_items_in_batch) is the same
    whether it shifts the labels or not (for this config's GPT-2, whose loss_type is None,
    transformers 5.24 does not shift: Trainer._loss_shifts_labels is False, and a step's
    loss would be scaled by 11/12)."""
    out = []
    for i in range(n):
        k = offset if same else i + offset
        ids = [(7 * k + 3 * j + (k * j) % 5) % 64 for j in range(12)]
        out.append({"input_ids": ids, "labels": [-100] + ids[1:]})
    return out


class Recorder(TrainerCallback):
    def __init__(self):
        self.events = []

    def record(self, event, state, control, kwargs):
        entry = {"event": event, "global_step": state.global_step, "epoch": state.epoch,
                 "max_steps": state.max_steps,
                 "control": {f: bool(getattr(control, f)) for f in FLAGS}}
        if event == "on_log":
            entry["keys"] = sorted(kwargs["logs"])
            entry["values"] = {k: v for k, v in kwargs["logs"].items()
                               if not k.endswith(CLOCK_KEYS)}
        if event in ("on_evaluate", "on_predict"):
            entry["keys"] = sorted(kwargs["metrics"])
        self.events.append(entry)


for _event in EVENTS:
    setattr(Recorder, _event,
            (lambda name: lambda self, args, state, control, **kw: self.record(
                name, state, control, kw))(_event))


class StopAt(TrainerCallback):
    """Sets `flags` at on_step_end of global step `step` (-1: every step)."""

    def __init__(self, step, flags):
        self.step, self.flags = step, flags

    def on_step_end(self, args, state, control, **kwargs):
        if self.step in (-1, state.global_step):
            for name, value in self.flags.items():
                setattr(control, name, value)


def write_model():
    """The tiny GPT-2 both trainers start from (config.json + model.safetensors)."""
    torch.manual_seed(0)
    GPT2LMHeadModel(GPT2Config(**MODEL_CONFIG)).save_pretrained(MODEL_DIR)


def run(case):
    model = GPT2LMHeadModel.from_pretrained(MODEL_DIR)
    train = rows(case["train_rows"], 3, same=True)
    evalr = rows(case["eval_rows"], 100)
    rec = Recorder()
    callbacks = []
    if "stop_at" in case:
        callbacks.append(StopAt(case["stop_at"]["step"], case["stop_at"]["flags"]))
    callbacks.append(rec)
    with tempfile.TemporaryDirectory() as tmp:
        args = TrainingArguments(output_dir=tmp, report_to="none", disable_tqdm=True, seed=0,
                                 use_cpu=True, dataloader_num_workers=0,
                                 **COMMON, **case["args"])
        trainer = Trainer(model=model, args=args, train_dataset=Dataset.from_list(train),
                          eval_dataset=Dataset.from_list(evalr), callbacks=callbacks)
        trainer.train()
        for call in case.get("after", []):
            rec.events.append({"event": "call " + call})
            if call == "evaluate":
                trainer.evaluate()
            else:
                trainer.predict(Dataset.from_list(evalr))
    return {"name": case["name"], "args": {**COMMON, **case["args"]},
            "train_rows": train, "eval_rows": evalr, "stop_at": case.get("stop_at"),
            "after": case.get("after", []),
            "events": rec.events}


def dump(fixture):
    """JSON with one event (or row) per line: small diffs when regenerated."""
    def one_per_line(items):
        return "[\n" + ",\n".join("   " + json.dumps(x) for x in items) + "\n  ]"

    cases = []
    for c in fixture["cases"]:
        fields = [f'  "{k}": ' + (one_per_line(v) if k in ("events", "train_rows", "eval_rows")
                                  else json.dumps(v)) for k, v in c.items()]
        cases.append(" {\n" + ",\n".join(fields) + "\n }")
    head = {k: v for k, v in fixture.items() if k != "cases"}
    return (json.dumps(head, indent=1)[:-2] + ',\n "cases": [\n' + ",\n".join(cases)
            + "\n ]\n}\n")


def main():
    fixture = {"generator": "tools/make_callback_order_fixture.py",
               "transformers": transformers.__version__, "torch": torch.__version__,
               "model": "tiny_gpt2", "cases": []}
    write_model()
    fixture["cases"] = [run(c) for c in CASES]
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(dump(fixture))
    for c in fixture["cases"]:
        print(c["name"], len(c["events"]), "events")


if __name__ == "__main__":
    main()
