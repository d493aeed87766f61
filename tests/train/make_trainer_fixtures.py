#!/usr/bin/env python3
"""Writes tests/train/fixtures/trainer_flow.json: what the Hugging Face
Trainer does, event by event, for a few argument sets — read by
tests/train/flow_test.cpp, which runs loom's Trainer with the same arguments
and compares.

Recorded per case: every callback event with the global step it saw
("on_step_end@3"), the log_history entries (step, sorted keys, epoch), the
checkpoint-N directories left at the end, best_model_checkpoint (its
basename), best_metric, global_step, and the top-level keys of a
checkpoint's trainer_state.json. These depend only on the arguments, the
dataset sizes and the metric values — never on the model's numbers: the
model is a tiny torch module, and the metrics that select the best model come
from a fixed sequence (compute_metrics returns SEQ[i] at its i-th call), which
the C++ test replays.

Assumes torch, transformers and accelerate from PyPI; CPU is enough.

  python3 tests/train/make_trainer_fixtures.py   # (re)writes the fixture
"""
import json
import os
import pathlib
import tempfile

import torch
import transformers
from transformers import (EarlyStoppingCallback, Trainer, TrainerCallback,
                          TrainingArguments)

ROOT = pathlib.Path(__file__).resolve().parent
OUT = ROOT / "fixtures" / "trainer_flow.json"

EVENTS = ["on_init_end", "on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end",
          "on_step_begin", "on_substep_end", "on_pre_optimizer_step", "on_optimizer_step",
          "on_step_end", "on_evaluate", "on_predict", "on_save", "on_log", "on_prediction_step"]


class Recorder(TrainerCallback):
    def __init__(self):
        self.events = []

    def __getattribute__(self, name):
        if name in EVENTS:
            def record(args, state, control, **kwargs):
                self.events.append(f"{name}@{state.global_step}")
            return record
        return object.__getattribute__(self, name)


class TinyLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.emb = torch.nn.Embedding(32, 8)
        self.out = torch.nn.Linear(8, 32)

    def forward(self, input_ids, labels=None, attention_mask=None):
        logits = self.out(self.emb(input_ids))
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 32), labels.reshape(-1))
        return {"loss": loss, "logits": logits}


class Rows(torch.utils.data.Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        ids = torch.tensor([(i * 7 + j) % 32 for j in range(6)])
        return {"input_ids": ids, "labels": ids.clone()}


def metric_sequence(seq):
    calls = [0]

    def compute(p):
        v = seq[min(calls[0], len(seq) - 1)]
        calls[0] += 1
        return {"score": v}
    return compute


# Each case: the TrainingArguments (besides the fixed ones below), the
# dataset sizes, the compute_metrics sequence (or none) and early stopping.
CASES = [
    {"name": "steps_cadence", "train": 20, "eval": 8,
     "args": {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2,
              "num_train_epochs": 3, "logging_steps": 2, "logging_first_step": True,
              "eval_strategy": "steps", "eval_steps": 4, "save_steps": 3}},
    {"name": "epoch_cadence_fractional", "train": 20, "eval": 8,
     "args": {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2,
              "num_train_epochs": 2.5, "logging_strategy": "epoch", "eval_strategy": "epoch",
              "save_strategy": "epoch"}},
    {"name": "ratios_best_rotation", "train": 24, "eval": 8, "seq": [1.0, 5.0, 2.0, 3.0, 0.5],
     "args": {"per_device_train_batch_size": 4, "max_steps": 7, "logging_steps": 0.3,
              "eval_strategy": "steps", "eval_steps": 2, "save_steps": 2,
              "save_total_limit": 2, "load_best_model_at_end": True,
              "metric_for_best_model": "score", "greater_is_better": True}},
    {"name": "save_best_limit_one", "train": 16, "eval": 8, "seq": [3.0, 1.0, 2.0, 0.5, 4.0],
     "args": {"per_device_train_batch_size": 4, "num_train_epochs": 2, "logging_steps": 3,
              "eval_strategy": "steps", "eval_steps": 2, "save_strategy": "best",
              "metric_for_best_model": "score", "greater_is_better": False,
              "save_total_limit": 1}},
    {"name": "early_stopping", "train": 16, "eval": 8, "seq": [2.0, 2.0, 1.0, 3.0, 3.0, 3.0],
     "early_stopping": {"patience": 2, "threshold": 0.0},
     "args": {"per_device_train_batch_size": 4, "num_train_epochs": 5, "logging_steps": 1,
              "eval_strategy": "steps", "eval_steps": 2, "save_steps": 2,
              "load_best_model_at_end": True, "metric_for_best_model": "score",
              "greater_is_better": True}},
]


def run(case):
    out_dir = tempfile.mkdtemp(prefix="loom_trainer_fixture_")
    args = TrainingArguments(output_dir=out_dir, report_to="none", use_cpu=True,
                             disable_tqdm=True, learning_rate=1e-3, seed=0,
                             dataloader_num_workers=0, **case["args"])
    rec = Recorder()
    callbacks = [rec]
    if "early_stopping" in case:
        es = case["early_stopping"]
        callbacks.insert(0, EarlyStoppingCallback(es["patience"], es["threshold"]))
    trainer = Trainer(model=TinyLM(), args=args, train_dataset=Rows(case["train"]),
                      eval_dataset=Rows(case["eval"]),
                      compute_metrics=metric_sequence(case["seq"]) if "seq" in case else None,
                      callbacks=callbacks)
    trainer.train()
    state = trainer.state
    ckpts = sorted((d for d in os.listdir(out_dir) if d.startswith("checkpoint-")),
                   key=lambda d: int(d.split("-")[1]))
    state_keys = []
    if ckpts:
        with open(os.path.join(out_dir, ckpts[-1], "trainer_state.json")) as f:
            state_keys = sorted(json.load(f).keys())
    best = state.best_model_checkpoint
    return {
        "name": case["name"], "train": case["train"], "eval": case["eval"],
        "args": case["args"], "seq": case.get("seq"),
        "early_stopping": case.get("early_stopping"),
        "events": rec.events,
        "log_history": [{"step": e["step"], "keys": sorted(k for k in e if k != "step"),
                         "epoch": e.get("epoch")} for e in state.log_history],
        "checkpoints": ckpts,
        "best_model_checkpoint": os.path.basename(best) if best else None,
        "best_metric": state.best_metric,
        "global_step": state.global_step,
        "trainer_state_keys": state_keys,
    }


def main():
    cases = [run(c) for c in CASES]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"transformers": transformers.__version__, "cases": cases},
                              indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
