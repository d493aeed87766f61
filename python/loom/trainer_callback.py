"""transformers' trainer_callback names for loom's Trainer: TrainerState,
TrainerControl, TrainerCallback, EvalPrediction, and the handler that turns
the C++ loop's events into calls of the Python callbacks.

The loop runs in C++ (``loom::Trainer``); it calls Python only for events a
callback overrides (plus ``on_log``, which keeps ``state.log_history`` up to
date), once per event, with the GIL. The event order is the C++ Trainer's,
which follows transformers' ``Trainer._inner_training_loop``
(docs/python.md lists it).
"""

import dataclasses
import json
import weakref
from typing import Any, Dict, List, Optional

import numpy as np


@dataclasses.dataclass
class TrainerState:
    """transformers' TrainerState: steps are optimizer steps; ``log_history``
    is a list of dicts with transformers' keys (``loss``, ``grad_norm``,
    ``learning_rate``, ``epoch``, ``step``, ``eval_loss``, ``train_runtime``, ...)."""

    epoch: Optional[float] = None
    global_step: int = 0
    max_steps: int = 0
    logging_steps: int = 500
    eval_steps: int = 500
    save_steps: int = 500
    train_batch_size: Optional[int] = None
    num_train_epochs: int = 0
    num_input_tokens_seen: int = 0
    total_flos: float = 0
    log_history: List[Dict[str, float]] = dataclasses.field(default_factory=list)
    best_metric: Optional[float] = None
    best_global_step: Optional[int] = None
    best_model_checkpoint: Optional[str] = None
    is_local_process_zero: bool = True
    is_world_process_zero: bool = True
    is_hyper_param_search: bool = False
    trial_name: Optional[str] = None
    trial_params: Optional[Dict[str, Any]] = None
    stateful_callbacks: Dict[str, Any] = dataclasses.field(default_factory=dict)

    def save_to_json(self, json_path):
        """trainer_state.json as transformers writes it (indent 2, keys sorted)."""
        with open(json_path, "w", encoding="utf-8") as f:
            f.write(json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True) + "\n")

    @classmethod
    def load_from_json(cls, json_path):
        with open(json_path, encoding="utf-8") as f:
            return cls._from_dict(json.load(f))

    @classmethod
    def _from_dict(cls, values):
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in names})


@dataclasses.dataclass
class TrainerControl:
    """transformers' TrainerControl: the flags callbacks set to steer the loop."""

    should_training_stop: bool = False
    should_epoch_stop: bool = False
    should_save: bool = False
    should_evaluate: bool = False
    should_log: bool = False

    def _flags(self):
        return (self.should_training_stop, self.should_epoch_stop, self.should_save,
                self.should_evaluate, self.should_log)

    def _set_flags(self, flags):
        (self.should_training_stop, self.should_epoch_stop, self.should_save,
         self.should_evaluate, self.should_log) = (bool(f) for f in flags)


class TrainerCallback:
    """Override the events you need (transformers' names); each gets
    ``(args, state, control, **kwargs)`` with kwargs ``model``,
    ``processing_class``, ``logs`` (on_log) or ``metrics`` (on_evaluate,
    on_predict). Return None or a TrainerControl; set ``control``'s flags to
    stop, save, evaluate or log."""

    def on_init_end(self, args, state, control, **kwargs): pass
    def on_train_begin(self, args, state, control, **kwargs): pass
    def on_train_end(self, args, state, control, **kwargs): pass
    def on_epoch_begin(self, args, state, control, **kwargs): pass
    def on_epoch_end(self, args, state, control, **kwargs): pass
    def on_step_begin(self, args, state, control, **kwargs): pass
    def on_pre_optimizer_step(self, args, state, control, **kwargs): pass
    def on_optimizer_step(self, args, state, control, **kwargs): pass
    def on_substep_end(self, args, state, control, **kwargs): pass
    def on_step_end(self, args, state, control, **kwargs): pass
    def on_evaluate(self, args, state, control, **kwargs): pass
    def on_predict(self, args, state, control, metrics, **kwargs): pass
    def on_save(self, args, state, control, **kwargs): pass
    def on_log(self, args, state, control, **kwargs): pass


# The events the C++ loop reports (loom/callbacks.h); on_prediction_step is not one.
EVENTS = ("on_init_end", "on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end",
          "on_step_begin", "on_pre_optimizer_step", "on_optimizer_step", "on_substep_end",
          "on_step_end", "on_evaluate", "on_predict", "on_save", "on_log")


class EvalPrediction:
    """What compute_metrics gets: NumPy arrays ``predictions`` (the logits of
    every example, [N, ...]) and ``label_ids`` (or None); iterable as
    ``predictions, label_ids = p`` as transformers' EvalPrediction."""

    def __init__(self, predictions, label_ids, inputs=None, losses=None):
        self.predictions = predictions
        self.label_ids = label_ids
        self.inputs = inputs
        self.losses = losses

    def __iter__(self):
        return iter((self.predictions, self.label_ids))

    def __getitem__(self, i):
        return (self.predictions, self.label_ids)[i]

    def __len__(self):
        return 2


def _overrides(callback, event):
    method = getattr(type(callback), event, None)
    return method is not None and method is not getattr(TrainerCallback, event)


class CallbackHandler:
    """The Python side of the C++ loop's events (python/src/trainer.cpp)."""

    def __init__(self, trainer, callbacks):
        # A weak reference: the C++ Trainer holds this handler, the Python
        # Trainer holds the C++ one, and the garbage collector cannot see the cycle.
        self._trainer = weakref.ref(trainer)
        self.callbacks = list(callbacks)

    @property
    def trainer(self):
        return self._trainer()

    def events(self):
        """The events some callback overrides, plus on_log (state.log_history)."""
        wanted = {"on_log"}
        for cb in self.callbacks:
            wanted.update(e for e in EVENTS if _overrides(cb, e))
        return wanted

    def dispatch(self, event, global_step, epoch, max_steps, flags, payload):
        trainer = self.trainer
        state, control = trainer.state, trainer.control
        state.global_step, state.epoch, state.max_steps = global_step, epoch, max_steps
        control._set_flags(flags)
        kwargs = {"model": trainer.model, "processing_class": trainer.processing_class,
                  "tokenizer": trainer.processing_class}
        if event == "on_log":
            state.log_history.append({**payload, "step": global_step})
            kwargs["logs"] = payload
        elif payload is not None:
            kwargs["metrics"] = payload
        for cb in self.callbacks:
            result = getattr(cb, event)(trainer.args, state, control, **kwargs)
            if result is not None:
                control = result
        trainer.control = control
        return control._flags()


def eval_prediction_fn(compute_metrics):
    """compute_metrics(EvalPrediction) as the (predictions, label_ids) function C++ calls."""
    if compute_metrics is None:
        return None

    def call(predictions, label_ids):
        preds = None if predictions is None else np.array(predictions)
        labels = None if label_ids is None else np.array(label_ids)
        return compute_metrics(EvalPrediction(preds, labels))

    return call
