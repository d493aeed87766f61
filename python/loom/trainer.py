"""loom.Trainer: transformers' Trainer interface over the C++ loom::Trainer.

    trainer = loom.Trainer(model="path/to/gpt2", args=loom.TrainingArguments(output_dir="out"),
                           train_dataset=ds, processing_class=tokenizer, callbacks=[MyCallback()])
    trainer.train()                       # or train(resume_from_checkpoint=True)
    trainer.evaluate(); trainer.save_model()
    trainer.state.log_history             # [{"loss": ..., "grad_norm": ..., "step": 1, ...}, ...]

The loop runs in C++ with the GIL released; Python is called on events only
(trainer_callback.py). Raw rows (text, TRL's schemas, tables) and paths go
through the training-job API (loom/job.h: tokenized as `loom train` does);
pre-tokenized rows (``input_ids`` ...) become C++ examples directly. A
user's error raises LoomError (a ValueError) naming the argument; an
exception in a callback or compute_metrics ends training with that
exception; Ctrl-C stops at the next step boundary and raises
KeyboardInterrupt, the checkpoints already written intact.
"""

import collections
import dataclasses
import json
import os
import tempfile

from loom import _core
from loom import data as _data
from loom.trainer_callback import (CallbackHandler, TrainerControl, TrainerState,
                                   eval_prediction_fn)
from loom.training_args import TrainingArguments, base_args_json

TrainOutput = collections.namedtuple("TrainOutput", ["global_step", "training_loss", "metrics"])
PredictionOutput = collections.namedtuple("PredictionOutput",
                                          ["predictions", "label_ids", "metrics"])

get_last_checkpoint = _core.get_last_checkpoint

# The tasks a model object can serve, in the order a raw dataset is tried on them.
_TASKS = ("text-classification", "masked-lm", "causal-lm")


def _fail(message):
    raise _core.LoomError(f"[Trainer] {message}")


class Trainer:
    """transformers' Trainer arguments, in transformers' order. ``job_args``
    (loom's addition) sets JobArguments fields for raw rows by name
    (``block_size``, ``text_column``, ``label_column``, ``max_seq_length``, ...;
    docs/python.md)."""

    _task = ""  # the job's task for raw rows ("" = from the model)

    def __init__(self, model=None, args=None, data_collator=None, train_dataset=None,
                 eval_dataset=None, processing_class=None, model_init=None,
                 compute_loss_func=None, compute_metrics=None, callbacks=None,
                 optimizers=(None, None), preprocess_logits_for_metrics=None, *, job_args=None):
        for name, value in (("model_init", model_init), ("compute_loss_func", compute_loss_func),
                            ("preprocess_logits_for_metrics", preprocess_logits_for_metrics)):
            if value is not None:
                _fail(f"{name} is not supported (the loop runs in C++)")
        if tuple(optimizers) != (None, None):
            _fail("optimizers is not supported: set optim / learning_rate / lr_scheduler_type in "
                  "TrainingArguments")
        if args is None:
            args = self._default_args(model)
        if not isinstance(args, TrainingArguments):
            _fail(f"args: expected loom.TrainingArguments, got {type(args).__name__}")
        if compute_metrics is not None and not callable(compute_metrics):
            _fail(f"compute_metrics: expected a function, got {type(compute_metrics).__name__}")
        if job_args is not None and not isinstance(job_args, dict):
            _fail(f"job_args: expected a dict, got {type(job_args).__name__}")
        self.args = args
        self.processing_class = processing_class
        self.compute_metrics = compute_metrics
        self.state = TrainerState()
        self.control = TrainerControl()
        self.callback_handler = CallbackHandler(self, [])
        for cb in callbacks or []:
            self.callback_handler.callbacks.append(self._callback_instance(cb))
        self._keep = []  # temporary directories that must outlive the C++ objects
        self._job_fields = dict(job_args or {})
        self._args_json = base_args_json(args)
        self._tokenizer_dir = _data.tokenizer_dir(processing_class, self._keep)
        train_rows = _data.to_rows(train_dataset, "train_dataset")
        eval_rows = _data.to_rows(eval_dataset, "eval_dataset")
        self.model = self._check_model(model)
        given = [r for r in (train_rows, eval_rows) if r is not None]
        if any(r.kind == "tokens" for r in given) or not given:
            if any(r.kind != "tokens" for r in given):
                _fail("train_dataset and eval_dataset must both be pre-tokenized (input_ids) or "
                      "both raw")
            train, evald, collator = self._tokens_inputs(train_rows, eval_rows, data_collator)
        else:
            train, evald, collator = self._job_inputs(train_rows, eval_rows, data_collator)
        self.train_dataset, self.eval_dataset = train, evald
        self._cpp = _core.Trainer(self.model, self._args_json, train, evald, collator,
                                  self._tokenizer_dir or "",
                                  eval_prediction_fn(compute_metrics),
                                  self.callback_handler.dispatch,
                                  self.callback_handler.events())

    # ---- construction -------------------------------------------------
    def _default_args(self, model):
        return TrainingArguments(output_dir="trainer_output")

    def _sft_fields(self):
        return {}

    @staticmethod
    def _callback_instance(cb):
        cb = cb() if isinstance(cb, type) else cb
        if not callable(getattr(cb, "on_step_end", None)):
            _fail(f"callbacks: {type(cb).__name__} is not a TrainerCallback")
        return cb

    def _check_model(self, model):
        if model is None:
            _fail("model is required (a hub id, a directory, or a loom model)")
        if isinstance(model, (str, os.PathLike)):
            return os.fspath(model)
        if isinstance(model, _core.PretrainedModel):
            return model
        _fail(f"model: expected a hub id, a directory or a loom model (loom.AutoModelFor*), got "
              f"{type(model).__name__}")

    def _model_object(self):
        """The model of a str model argument, loaded (pre-tokenized data)."""
        if isinstance(self.model, str):
            directory = _core.resolve_model_dir(self.model)
            if self._tokenizer_dir is None and os.path.isfile(
                    os.path.join(directory, "tokenizer.json")):
                self._tokenizer_dir = directory
            self.model = _core.auto_from_pretrained(directory, "cpu")
        return self.model

    def _tokens_inputs(self, train_rows, eval_rows, data_collator):
        if self._job_fields:
            _fail(f"job_args {sorted(self._job_fields)} apply to raw rows, but the datasets are "
                  "pre-tokenized (input_ids)")
        self._model_object()
        pad_id = 0
        if self._tokenizer_dir:
            tok = _core.Tokenizer.from_pretrained(self._tokenizer_dir)
            pad_id = tok.pad_token_id if tok.pad_token_id is not None else (tok.eos_token_id or 0)
        collator = (_data.collator_of(data_collator, pad_id)
                    or _core.make_collator("padding", pad_id))
        train = _data.tokens_dataset(train_rows) if train_rows else None
        evald = _data.tokens_dataset(eval_rows) if eval_rows else None
        return train, evald, collator

    def _base_job_fields(self):
        fields = {}
        if self._task:
            fields["task"] = self._task
        if isinstance(self.model, str):
            fields["model_name_or_path"] = self.model
        else:
            tmp = tempfile.TemporaryDirectory(prefix="loom-config-")
            self._keep.append(tmp)
            path = os.path.join(tmp.name, "config.json")
            with open(path, "w", encoding="utf-8") as f:
                f.write(self.model.config_json())
            fields["config_name"] = path
            if not self._task and "task" not in self._job_fields:
                fields["task"] = next(t for t in _TASKS + ("",)
                                      if not t or _core.serves_task(self.model, t))
            if self._tokenizer_dir is None:
                _fail("raw rows with a loom model object need processing_class (a tokenizer)")
        if self._tokenizer_dir:
            fields["tokenizer_name"] = self._tokenizer_dir
        fields.update(self._sft_fields())
        fields.update(self._job_fields)
        return fields

    def _job_inputs(self, train_rows, eval_rows, data_collator):
        if data_collator is not None:
            _data.collator_of(data_collator, 0)  # refuses what loom cannot do
        fields = self._base_job_fields()
        if train_rows:
            fields.update(_data.job_data_fields(train_rows, "train"))
        if eval_rows:
            fields.update(_data.job_data_fields(eval_rows, "validation"))
        model = None if isinstance(self.model, str) else self.model
        job = _core.build_job(fields, self._args_json, model, want_train=train_rows is not None,
                              want_eval=eval_rows is not None)
        self.model = job.model
        if self._tokenizer_dir is None:
            self._tokenizer_dir = job.tokenizer_dir
        return job.train_dataset, job.eval_dataset, job.collator

    def _dataset(self, dataset, what):
        """A C++ dataset for evaluate / predict."""
        rows = _data.to_rows(dataset, what)
        if rows.kind == "tokens":
            return _data.tokens_dataset(rows)
        fields = self._base_job_fields()
        fields.update(_data.job_data_fields(rows, "validation"))
        job = _core.build_job(fields, self._args_json, self.model, want_train=False,
                              want_eval=True)
        return job.eval_dataset

    # ---- transformers' methods ----------------------------------------
    def train(self, resume_from_checkpoint=None, trial=None, ignore_keys_for_eval=None, **kwargs):
        """Trains; resume_from_checkpoint: a checkpoint directory, or True for
        output_dir's newest. Returns TrainOutput(global_step, training_loss, metrics)."""
        if kwargs or trial is not None:
            _fail(f"train: unsupported arguments {sorted(kwargs) + (['trial'] if trial else [])}")
        if resume_from_checkpoint is True:
            resume = "last"
        elif resume_from_checkpoint is None or resume_from_checkpoint is False:
            resume = None
        elif isinstance(resume_from_checkpoint, (str, os.PathLike)):
            resume = os.fspath(resume_from_checkpoint)
        else:
            _fail(f"resume_from_checkpoint: expected a path or a bool, got "
                  f"{type(resume_from_checkpoint).__name__}")
        try:
            step, loss, metrics = self._cpp.train(resume)
        finally:
            self._sync_state()
        return TrainOutput(step, loss, metrics)

    def evaluate(self, eval_dataset=None, ignore_keys=None, metric_key_prefix="eval"):
        """Metrics ``<prefix>_loss``, compute_metrics' (prefixed), runtime, epoch."""
        ds = None if eval_dataset is None else self._dataset(eval_dataset, "eval_dataset")
        try:
            return self._cpp.evaluate(ds, metric_key_prefix)
        finally:
            self._sync_state()

    def predict(self, test_dataset, ignore_keys=None, metric_key_prefix="test"):
        """PredictionOutput(predictions, label_ids, metrics): NumPy logits [N, ...]."""
        ds = self._dataset(test_dataset, "test_dataset")
        predictions, label_ids, metrics = self._cpp.predict(ds, metric_key_prefix)
        return PredictionOutput(predictions, label_ids, metrics)

    def save_model(self, output_dir=None, _internal_call=False):
        """Model, tokenizer files and training_args.json into output_dir (default args.output_dir)."""
        self._cpp.save_model("" if output_dir is None else os.fspath(output_dir))

    def save_state(self):
        self._cpp.save_state()

    def save_metrics(self, split, metrics, combined=True):
        self._cpp.save_metrics(split, dict(metrics), combined)

    def log_metrics(self, split, metrics):
        """Prints metrics as transformers' log_metrics does."""
        print(f"***** {split} metrics *****")
        width = max((len(k) for k in metrics), default=0)
        for key in sorted(metrics):
            print(f"  {key:<{width}} = {metrics[key]}")

    def is_world_process_zero(self):
        return self.state.is_world_process_zero

    def add_callback(self, callback):
        self.callback_handler.callbacks.append(self._callback_instance(callback))
        self._cpp.set_events(self.callback_handler.events())

    def pop_callback(self, callback):
        for i, cb in enumerate(self.callback_handler.callbacks):
            if cb is callback or (isinstance(callback, type) and type(cb) is callback):
                return self.callback_handler.callbacks.pop(i)
        return None

    def remove_callback(self, callback):
        self.pop_callback(callback)

    def _sync_state(self):
        values = json.loads(self._cpp.state_json())
        for f in dataclasses.fields(TrainerState):
            if f.name in values:
                setattr(self.state, f.name, values[f.name])
