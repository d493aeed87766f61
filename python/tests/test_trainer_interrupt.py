"""Ctrl-C during Trainer.train(): SIGINT arrives while the C++ loop runs a step
(the GIL released, no Python callback on the step events); the loop stops at
the next step boundary (PyErr_CheckSignals at each step end), raises
KeyboardInterrupt, and the last checkpoint is intact: resuming from it
trains on. Run in a child process, so a stray signal cannot hit pytest."""

import json
import os
import pathlib
import subprocess
import sys

import loom

ROOT = pathlib.Path(__file__).resolve().parents[2]

CHILD = r"""
import json, os, signal, sys, threading, time
import numpy as np
import loom

model, out = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(0)
rows = [{"input_ids": [int(v) for v in rng.integers(0, 603, 12)]} for _ in range(64)]
for r in rows:
    r["labels"] = r["input_ids"]

class SigintLater(loom.TrainerCallback):
    # Only on_train_begin runs Python: the signal is seen by the step-end check.
    def on_train_begin(self, args, state, control, **kwargs):
        def kill():  # once checkpoint-5 is on disk, mid-run
            while not os.path.isdir(os.path.join(out, "checkpoint-5")):
                time.sleep(0.01)
            os.kill(os.getpid(), signal.SIGINT)
        threading.Thread(target=kill, daemon=True).start()

args = loom.TrainingArguments(output_dir=out, max_steps=100000, save_steps=5,
                              save_total_limit=2, logging_steps=100000, report_to="none",
                              disable_tqdm=True, per_device_train_batch_size=2)
trainer = loom.Trainer(model=model, args=args, train_dataset=rows, callbacks=[SigintLater()])
result = {}
try:
    trainer.train()
    result["interrupted"] = False
except KeyboardInterrupt:
    result["interrupted"] = True
result["global_step"] = trainer.state.global_step
last = loom.get_last_checkpoint(out)
result["last"] = last
step = int(last.rsplit("-", 1)[1])
args2 = loom.TrainingArguments(output_dir=out, max_steps=step + 2, save_strategy="no",
                               logging_steps=1, report_to="none", disable_tqdm=True,
                               per_device_train_batch_size=2)
resumed = loom.Trainer(model=model, args=args2, train_dataset=rows)
resumed.train(resume_from_checkpoint=last)
result["resumed_step"] = resumed.state.global_step
result["checkpoint_step"] = step
print("RESULT " + json.dumps(result))
"""


def test_sigint_stops_at_a_step_boundary_and_keeps_the_checkpoint(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(loom.__file__)), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", CHILD, str(ROOT / "tests/fixtures/sft/tiny_qwen3"),
                           str(tmp_path / "out")], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    result = json.loads(line[len("RESULT "):])
    assert result["interrupted"] is True
    assert 5 <= result["checkpoint_step"] <= result["global_step"] < 100000
    assert result["checkpoint_step"] % 5 == 0
    assert result["resumed_step"] == result["checkpoint_step"] + 2
