"""loom.Trainer's callback events against transformers' real Trainer: the
fixture python/tests/fixtures/hf_callback_order.json (written by
tools/make_callback_order_fixture.py with transformers' Trainer) holds, per
set-up of TrainingArguments, every event a callback got, in order, with
state.global_step, state.epoch, state.max_steps, the TrainerControl flags it
saw, and what on_log / on_evaluate / on_predict carried. loom runs the same
arguments on the same rows from the same tiny GPT-2 (tests/fixtures/tiny_gpt2,
no dropout) and must give the same sequence, state, flags, log keys and
logged values (losses to 1e-4: two implementations of the same float32 math).

transformers' on_prediction_step (one per evaluation batch) is left out: loom
does not call it from Python (docs/python.md). Needs neither torch nor
transformers: the fixture is committed."""

import json
import math
import pathlib

import pytest

import loom
from loom.trainer_callback import EVENTS

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"
FIXTURE = json.loads((FIXTURES / "hf_callback_order.json").read_text(encoding="utf-8"))
MODEL = str(FIXTURES / FIXTURE["model"])
FLAGS = ("should_training_stop", "should_epoch_stop", "should_save", "should_evaluate",
         "should_log")
HF_ONLY = {"on_prediction_step"}
# Relative tolerance of logged values (losses, grad_norm, learning rates, epochs).
RTOL = 1e-4


class Recorder(loom.TrainerCallback):
    """Records what the fixture's recorder records, for every event."""

    def __init__(self):
        self.events = []

    def record(self, event, state, control, kwargs):
        entry = {"event": event, "global_step": state.global_step, "epoch": state.epoch,
                 "max_steps": state.max_steps,
                 "control": {f: bool(getattr(control, f)) for f in FLAGS}}
        if event == "on_log":
            entry["keys"] = sorted(kwargs["logs"])
            entry["values"] = dict(kwargs["logs"])
        if event in ("on_evaluate", "on_predict"):
            entry["keys"] = sorted(kwargs["metrics"])
        self.events.append(entry)


for _event in EVENTS:
    setattr(Recorder, _event,
            (lambda name: lambda self, args, state, control, **kw: self.record(
                name, state, control, kw))(_event))


class SetFlags(loom.TrainerCallback):
    """The fixture's StopAt: sets flags at on_step_end of one step (-1: every step)."""

    def __init__(self, step, flags):
        self.step, self.flags = step, flags

    def on_step_end(self, args, state, control, **kwargs):
        if self.step in (-1, state.global_step):
            for name, value in self.flags.items():
                setattr(control, name, value)


def run_loom(case, tmp_path):
    rec = Recorder()
    callbacks = [rec]
    if case["stop_at"]:
        callbacks.insert(0, SetFlags(case["stop_at"]["step"], case["stop_at"]["flags"]))
    args = loom.TrainingArguments(output_dir=str(tmp_path / "out"), report_to="none",
                                  disable_tqdm=True, seed=0, **case["args"])
    model = loom.AutoModelForCausalLM.from_pretrained(MODEL)
    trainer = loom.Trainer(model=model, args=args, train_dataset=case["train_rows"],
                           eval_dataset=case["eval_rows"], callbacks=callbacks)
    trainer.train()
    for call in case["after"]:
        rec.events.append({"event": "call " + call})
        if call == "evaluate":
            trainer.evaluate()
        else:
            trainer.predict(case["eval_rows"])
    return rec.events


def line(e):
    """One event as a line, for the side-by-side diff of a failure."""
    if "control" not in e:
        return e["event"]
    flags = "".join(name[7] if on else "." for name, on in e["control"].items())
    return (f'{e["event"]} step={e["global_step"]} epoch={float(e["epoch"]):.4f} '
            f'max_steps={e["max_steps"]} flags={flags} {e.get("keys", "")}')


def value_mismatches(hf, ours):
    """The logged values that differ (the clock's are not in the fixture)."""
    bad = []
    for key, want in hf.get("values", {}).items():
        got = ours["values"].get(key)
        if got is None or not math.isclose(got, want, rel_tol=RTOL, abs_tol=1e-9):
            bad.append(f'{line(hf)}: {key} transformers {want!r} loom {got!r}')
    return bad


@pytest.mark.parametrize("case", FIXTURE["cases"], ids=[c["name"] for c in FIXTURE["cases"]])
def test_events_match_transformers_trainer(case, tmp_path):
    hf = [e for e in case["events"] if e["event"] not in HF_ONLY]
    ours = run_loom(case, tmp_path)
    want, got = [line(e) for e in hf], [line(e) for e in ours]
    if want != got:
        rows = [f"{i:3d} {'==' if w == g else '!='} hf:   {w}\n           loom: {g}"
                for i, (w, g) in enumerate(zip(want, got))]
        pytest.fail(f"{case['name']}: {len(want)} events from transformers, {len(got)} from "
                    "loom; first difference marked !=\n" + "\n".join(rows))
    bad = [m for h, o in zip(hf, ours) for m in value_mismatches(h, o)]
    assert not bad, "\n".join(bad)


def test_fixture_covers_the_events_loom_reports():
    """The set-ups reach every event loom forwards to Python (a new event
    needs a new case)."""
    seen = {e["event"] for c in FIXTURE["cases"] for e in c["events"]}
    assert set(EVENTS) <= seen, sorted(set(EVENTS) - seen)
