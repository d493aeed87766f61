"""loom.Trainer from Python: HF's callback events in transformers' order,
TrainerControl's flags honoured, compute_metrics on NumPy arrays, resume,
pre-tokenized and raw rows, a model object trained in place, and bad input
(LoomError, or the callback's own exception with its traceback). The model
is the tiny random Qwen3 of tests/fixtures/sft (its tokenizer included)."""

import json
import pathlib
import threading
import traceback

import numpy as np
import pytest

import loom
from conftest import optional_module
from loom.trainer_callback import EVENTS

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "sft"
MODEL = str(FIXTURES / "tiny_qwen3")
TEXTS = [f"line {i}: the quick brown fox jumps over {i % 7} lazy dogs." for i in range(40)]


def token_rows(n=8, length=12, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        ids = [int(v) for v in rng.integers(0, 603, length)]
        rows.append({"input_ids": ids, "labels": ids})
    return rows


def make_args(tmp_path, **kw):
    values = dict(output_dir=str(tmp_path / "out"), per_device_train_batch_size=2,
                  report_to="none", disable_tqdm=True, learning_rate=1e-2, seed=3)
    values.update(kw)
    return loom.TrainingArguments(**values)


def losses(history):
    return [h["loss"] for h in history if "loss" in h]


class Recorder(loom.TrainerCallback):
    """Overrides every event and records its name."""

    def __init__(self):
        self.events = []


for _event in EVENTS:
    setattr(Recorder, _event,
            (lambda name: lambda self, args, state, control, **kw: self.events.append(name))(
                _event))


# transformers' Trainer order (trainer.py: _inner_training_loop, _maybe_log_save_evaluate,
# evaluate; callbacks run in the order added, after DefaultFlowCallback): on_init_end in
# __init__; on_train_begin; on_epoch_begin; per step on_step_begin, on_pre_optimizer_step,
# on_optimizer_step, on_step_end, then log (on_log), evaluate (its metrics logged: on_log,
# then on_evaluate), save (on_save); after the last step on_epoch_end, the train metrics'
# on_log, on_train_end. Here: max_steps 4 = one epoch of 4 batches, logging and
# evaluation every 2 steps, a checkpoint at step 4.
STEP = ["on_step_begin", "on_pre_optimizer_step", "on_optimizer_step", "on_step_end"]
HF_ORDER = (["on_init_end", "on_train_begin", "on_epoch_begin"] + STEP + STEP
            + ["on_log", "on_log", "on_evaluate"] + STEP + STEP
            + ["on_log", "on_log", "on_evaluate", "on_save", "on_epoch_end", "on_log",
               "on_train_end"])


def test_callback_events_come_in_transformers_order(tmp_path):
    rec = Recorder()
    args = make_args(tmp_path, max_steps=4, logging_steps=2, eval_strategy="steps", eval_steps=2,
                     save_steps=4)
    trainer = loom.Trainer(model=MODEL, args=args, train_dataset=token_rows(),
                           eval_dataset=token_rows(2, seed=1), callbacks=[rec])
    trainer.train()
    assert rec.events == HF_ORDER
    assert trainer.state.global_step == 4
    assert (tmp_path / "out" / "checkpoint-4" / "trainer_state.json").is_file()


def test_state_log_history_has_transformers_keys(tmp_path):
    trainer = loom.Trainer(model=MODEL, args=make_args(tmp_path, max_steps=3, logging_steps=1),
                           train_dataset=token_rows())
    out = trainer.train()
    state = trainer.state
    assert (state.global_step, state.max_steps, out.global_step) == (3, 3, 3)
    assert state.epoch == pytest.approx(0.75)  # 3 of 4 batches
    steps = [h for h in state.log_history if "loss" in h]
    assert [h["step"] for h in steps] == [1, 2, 3]
    assert set(steps[0]) == {"loss", "grad_norm", "learning_rate", "epoch", "step"}
    assert state.log_history[-1]["train_loss"] == pytest.approx(out.training_loss)
    assert out.training_loss == pytest.approx(np.mean(losses(state.log_history)))
    saved = json.loads((tmp_path / "out" / "checkpoint-3" / "trainer_state.json").read_text())
    assert saved["log_history"][:3] == state.log_history[:3]


class StopAt(loom.TrainerCallback):
    def __init__(self, step, **flags):
        self.step, self.flags = step, flags

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            for name, value in self.flags.items():
                setattr(control, name, value)


def test_control_flags_are_honoured(tmp_path):
    args = make_args(tmp_path, max_steps=6, logging_steps=100, save_strategy="no")
    cb = StopAt(2, should_training_stop=True, should_save=True, should_evaluate=True,
                should_log=True)
    trainer = loom.Trainer(model=MODEL, args=args, train_dataset=token_rows(),
                           eval_dataset=token_rows(2, seed=1), callbacks=[cb])
    trainer.train()
    assert trainer.state.global_step == 2
    assert (tmp_path / "out" / "checkpoint-2").is_dir()  # save_strategy "no", saved on request
    assert not (tmp_path / "out" / "checkpoint-1").exists()
    logged = trainer.state.log_history
    assert any("eval_loss" in h and h["step"] == 2 for h in logged)
    assert any("loss" in h and h["step"] == 2 for h in logged)


def test_compute_metrics_gets_numpy_arrays(tmp_path):
    rows = token_rows(4, seed=2)
    seen = {}

    def compute_metrics(p):
        seen["p"] = p
        preds, labels = p
        assert isinstance(preds, np.ndarray) and isinstance(labels, np.ndarray)
        return {"first_label": float(labels[0, 0]), "argmax_mean": float(preds.argmax(-1).mean())}

    trainer = loom.Trainer(model=MODEL, args=make_args(tmp_path), eval_dataset=rows,
                           compute_metrics=compute_metrics)
    metrics = trainer.evaluate()
    p = seen["p"]
    assert p.predictions.shape == (4, 12, 603)
    np.testing.assert_array_equal(p.label_ids, np.array([r["labels"] for r in rows]))
    assert metrics["eval_first_label"] == rows[0]["labels"][0]
    assert metrics["eval_argmax_mean"] == pytest.approx(p.predictions.argmax(-1).mean())
    pred = trainer.predict(rows)
    np.testing.assert_allclose(pred.predictions, p.predictions, rtol=1e-6)
    assert "test_loss" in pred.metrics and "test_first_label" in pred.metrics


def test_resume_gives_the_uninterrupted_losses(tmp_path):
    rows = token_rows(16)
    full = loom.Trainer(model=MODEL, args=make_args(tmp_path / "a", max_steps=6, logging_steps=1,
                                                    save_strategy="no"), train_dataset=rows)
    full.train()
    args = make_args(tmp_path / "b", max_steps=6, logging_steps=1, save_steps=3)
    first = loom.Trainer(model=MODEL, args=args, train_dataset=rows,
                         callbacks=[StopAt(3, should_training_stop=True)])
    first.train()
    assert first.state.global_step == 3
    resumed = loom.Trainer(model=MODEL, args=args, train_dataset=rows)
    resumed.train(resume_from_checkpoint=True)
    assert resumed.state.global_step == 6
    np.testing.assert_allclose(losses(resumed.state.log_history), losses(full.state.log_history),
                               rtol=1e-6)


def test_raw_text_rows_and_a_model_object_trained_in_place(tmp_path):
    loom.manual_seed(0)
    model = loom.AutoModelForCausalLM.from_pretrained(MODEL)
    before = {n: np.array(p.numpy()) for n, p in model.named_parameters()}
    tok = loom.AutoTokenizer.from_pretrained(MODEL)
    trainer = loom.Trainer(model=model, args=make_args(tmp_path, max_steps=2, logging_steps=1),
                           train_dataset=[{"text": t} for t in TEXTS], processing_class=tok,
                           job_args={"block_size": 16})
    assert trainer.model is model
    trainer.train()
    after = dict(model.named_parameters())
    assert any(not np.allclose(before[n], after[n].numpy()) for n in before)
    assert len(trainer.state.log_history) == 3
    # The same text as a list of str and as a file: the same blocks, so the same first loss.
    path = tmp_path / "corpus.txt"
    path.write_text("".join(t + "\n" for t in TEXTS))
    first = []
    for data in (path, TEXTS):
        t = loom.Trainer(model=MODEL, args=make_args(tmp_path / str(len(first)), max_steps=1,
                                                     logging_steps=1),
                         train_dataset=data, job_args={"block_size": 16, "keep_linebreaks": False})
        t.train()
        first.append(losses(t.state.log_history)[0])
    assert first[0] == pytest.approx(first[1], rel=1e-6)


def test_gil_is_released_while_steps_run(tmp_path):
    count = [0]
    done = threading.Event()

    def spin():
        while not done.is_set():
            count[0] += 1

    class Seen(loom.TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            self.start = count[0]

        def on_train_end(self, args, state, control, **kwargs):
            self.end = count[0]

    seen = Seen()
    thread = threading.Thread(target=spin)
    thread.start()
    try:
        loom.Trainer(model=MODEL, args=make_args(tmp_path, max_steps=8), train_dataset=token_rows(),
                     callbacks=[seen]).train()
    finally:
        done.set()
        thread.join()
    assert seen.end - seen.start > 1000  # the other thread ran during the steps


class Boom(loom.TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == 2:
            raise RuntimeError("boom at step 2")


def test_an_exception_in_a_callback_ends_training_with_its_traceback(tmp_path):
    trainer = loom.Trainer(model=MODEL, args=make_args(tmp_path, max_steps=5),
                           train_dataset=token_rows(), callbacks=[Boom()])
    with pytest.raises(RuntimeError, match="boom at step 2") as info:
        trainer.train()
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "on_step_end" in frames
    assert trainer.state.global_step == 2


def test_compute_metrics_errors(tmp_path):
    def bad_type(p):
        return [1.0]

    def raises(p):
        raise KeyError("no metric")

    for fn, error in ((bad_type, loom.LoomError), (raises, KeyError)):
        trainer = loom.Trainer(model=MODEL, args=make_args(tmp_path), eval_dataset=token_rows(2),
                               compute_metrics=fn)
        with pytest.raises(error):
            trainer.evaluate()


def test_bad_input_raises_loom_error(tmp_path):
    args = make_args(tmp_path, max_steps=1)
    with pytest.raises(loom.LoomError, match="column 'text'"):
        loom.Trainer(model=MODEL, args=args, train_dataset=[{"content": t} for t in TEXTS])
    with pytest.raises(loom.LoomError, match="args: expected loom.TrainingArguments, got dict"):
        loom.Trainer(model=MODEL, args={"output_dir": "x"}, train_dataset=token_rows())
    with pytest.raises(loom.LoomError, match="model: expected"):
        loom.Trainer(model=3, args=args, train_dataset=token_rows())
    with pytest.raises(loom.LoomError, match="train_dataset: expected"):
        loom.Trainer(model=MODEL, args=args, train_dataset=42)
    with pytest.raises(loom.LoomError, match="not a TrainerCallback"):
        loom.Trainer(model=MODEL, args=args, train_dataset=token_rows(), callbacks=[object()])
    with pytest.raises(loom.LoomError, match="data_collator"):
        loom.Trainer(model=MODEL, args=args, train_dataset=token_rows(),
                     data_collator=lambda rows: rows)
    with pytest.raises(loom.LoomError, match="labels"):
        rows = token_rows(2)
        rows[1]["labels"] = rows[1]["labels"][:3]
        loom.Trainer(model=MODEL, args=args, train_dataset=rows)
    with pytest.raises(loom.LoomError, match="apply to raw rows"):
        loom.Trainer(model=MODEL, args=args, train_dataset=token_rows(), job_args={"block_size": 8})
    with pytest.raises(loom.LoomError, match="unknown argument 'blok_size'"):
        loom.Trainer(model=MODEL, args=args, train_dataset=TEXTS, job_args={"blok_size": 8})


def test_hf_argument_parser_without_transformers(tmp_path):
    parser = loom.HfArgumentParser((loom.TrainingArguments,))
    (args,) = parser.parse_args_into_dataclasses(
        ["--output_dir", str(tmp_path), "--learning_rate", "0.5", "--do_train", "--max_steps",
         "7", "--disable_tqdm", "false"])
    assert (args.learning_rate, args.do_train, args.max_steps, args.disable_tqdm) == (
        0.5, True, 7, False)
    with pytest.raises(SystemExit):
        parser.parse_args_into_dataclasses(["--learning_rate", "fast"])


def test_a_transformers_tokenizer_as_processing_class(tmp_path):
    transformers = optional_module("transformers", "the transformers tokenizer case needs it")
    by_dir = transformers.AutoTokenizer.from_pretrained(MODEL)  # name_or_path: the directory
    by_file = transformers.PreTrainedTokenizerFast(tokenizer_file=str(pathlib.Path(MODEL) /
                                                                      "tokenizer.json"))
    first = []
    for i, tok in enumerate((loom.AutoTokenizer.from_pretrained(MODEL), by_dir, by_file)):
        model = loom.AutoModelForCausalLM.from_pretrained(MODEL)
        t = loom.Trainer(model=model, args=make_args(tmp_path / str(i), max_steps=1,
                                                     logging_steps=1),
                         train_dataset=TEXTS, processing_class=tok, job_args={"block_size": 16})
        t.train()
        first.append(losses(t.state.log_history)[0])
    assert first[1] == first[0] and first[2] == first[0]
