"""loom.TrainingArguments: the Hugging Face Trainer's arguments as a dataclass.

Generated at import from the C++ field table (src/train/training_args.cpp):
every field with its name, type, default and help text, in declaration
order. ``__post_init__`` runs the C++ ``TrainingArguments::validate()``
(transformers' ``__post_init__`` checks and derived defaults: ``do_eval`` set
by an eval strategy, ``eval_steps`` falling back to ``logging_steps``,
``run_name`` and ``logging_dir`` filled in, ...) and takes back the fields it
fills. A bad value raises ``loom.LoomError`` (a ``ValueError``) naming the
argument, e.g. ``[TrainingArguments] learning_rate: expected a number, got 'x'``.

So both of these work as with transformers' class:

    transformers.HfArgumentParser(loom.TrainingArguments).parse_args_into_dataclasses()
    loom.TrainingArguments(**json.load(open("training_args.json")))
"""

import dataclasses
import json
import os
from typing import Optional

from loom import _core

_PY_TYPES = {"bool": bool, "int": int, "float": float, "string": str}


def _jsonable(value):
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def base_args_json(args):
    """The C++ TrainingArguments fields of `args` (a subclass such as
    SFTConfig adds its own) as JSON text."""
    names = _base_names()
    return json.dumps({f.name: _jsonable(getattr(args, f.name))
                       for f in dataclasses.fields(args) if f.name in names})


def _base_names():
    return {name for name, _, _ in _core.training_args_fields()}


def _post_init(self):
    names = _base_names()
    values = {f.name: _jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)
              if f.name in names}
    validated = json.loads(_core.training_args_validate(json.dumps(values)))
    for name, value in validated.items():
        object.__setattr__(self, name, value)


def _to_dict(self):
    """Every field by name (transformers' to_dict)."""
    return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def _to_json_string(self):
    """The fields as JSON, keys sorted, two-space indent (training_args.json)."""
    return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"


def _make_class():
    defaults = json.loads(_core.training_args_defaults())
    fields = []
    for name, type_name, help_text in _core.training_args_fields():
        optional = type_name.endswith("?")
        py_type = _PY_TYPES[type_name.rstrip("?")]
        fields.append((name, Optional[py_type] if optional else py_type,
                       dataclasses.field(default=defaults[name],
                                         metadata={"help": help_text})))
    namespace = {
        "__post_init__": _post_init,
        "to_dict": _to_dict,
        "to_json_string": _to_json_string,
        "__doc__": __doc__,
    }
    cls = dataclasses.make_dataclass("TrainingArguments", fields, namespace=namespace)
    cls.__module__ = __name__  # make_dataclass's module= is Python 3.12's
    return cls


TrainingArguments = _make_class()
