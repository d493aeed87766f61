"""loom.HfArgumentParser: transformers' HfArgumentParser for dataclasses
(loom.TrainingArguments, SFTConfig, a script's ModelArguments ...), so a
run_clm-style script parses its flags without transformers:

    parser = loom.HfArgumentParser((ModelArguments, loom.TrainingArguments))
    model_args, training_args = parser.parse_args_into_dataclasses()

Each field becomes ``--name``; bools take ``--flag``, ``--flag true`` or
``--flag false`` (and ``--no_flag`` for a default of True); Optional[X] is X
with default None; a field without a default is required. Also
``parse_dict`` and ``parse_json_file``; set_seed seeds loom, random, NumPy.
"""

import argparse
import dataclasses
import json
import random
import sys
import typing

import numpy as np

from loom import _core


def _str_to_bool(text):
    if isinstance(text, bool):
        return text
    if text.lower() in ("yes", "true", "t", "y", "1"):
        return True
    if text.lower() in ("no", "false", "f", "n", "0"):
        return False
    raise argparse.ArgumentTypeError(f"truthy value expected: got {text}")


def _base_type(tp):
    """X for Optional[X] / Union[X, None]; the type itself otherwise."""
    if typing.get_origin(tp) is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
        return str
    return tp


class HfArgumentParser(argparse.ArgumentParser):
    def __init__(self, dataclass_types, **kwargs):
        super().__init__(**kwargs)
        if dataclasses.is_dataclass(dataclass_types):
            dataclass_types = [dataclass_types]
        self.dataclass_types = list(dataclass_types)
        for dtype in self.dataclass_types:
            hints = typing.get_type_hints(dtype)
            for field in dataclasses.fields(dtype):
                if field.init:
                    self._add_field(field, hints.get(field.name, str))

    def _add_field(self, field, tp):
        kwargs = {"help": field.metadata.get("help")}
        base = _base_type(tp)
        origin = typing.get_origin(base)
        if field.default is not dataclasses.MISSING:
            kwargs["default"] = field.default
        elif field.default_factory is not dataclasses.MISSING:
            kwargs["default"] = field.default_factory()
        else:
            kwargs["required"] = True
        if base is bool:
            kwargs.update(type=_str_to_bool, nargs="?", const=True)
            if kwargs.get("default") is True:
                self.add_argument(f"--no_{field.name}", action="store_false", dest=field.name)
        elif origin is list or base is list:
            (item,) = typing.get_args(base) or (str,)
            kwargs.update(type=item, nargs="+")
        elif origin is typing.Literal:
            kwargs.update(choices=typing.get_args(base), type=type(typing.get_args(base)[0]))
        elif base in (int, float, str):
            kwargs["type"] = base
        self.add_argument(f"--{field.name}", **kwargs)

    def parse_args_into_dataclasses(self, args=None, return_remaining_strings=False,
                                    look_for_args_file=True, args_filename=None,
                                    args_file_flag=None):
        namespace, remaining = self.parse_known_args(args=args)
        outputs = []
        values = vars(namespace)
        for dtype in self.dataclass_types:
            names = {f.name for f in dataclasses.fields(dtype) if f.init}
            outputs.append(dtype(**{k: values.pop(k) for k in list(values) if k in names}))
        if return_remaining_strings:
            return (*outputs, remaining)
        if remaining:
            raise ValueError(f"Some specified arguments are not used by the HfArgumentParser: "
                             f"{remaining}")
        return tuple(outputs)

    def parse_dict(self, args, allow_extra_keys=False):
        unused = set(args)
        outputs = []
        for dtype in self.dataclass_types:
            names = {f.name for f in dataclasses.fields(dtype) if f.init}
            outputs.append(dtype(**{k: v for k, v in args.items() if k in names}))
            unused -= names
        if unused and not allow_extra_keys:
            raise ValueError(f"Some keys are not used by the HfArgumentParser: {sorted(unused)}")
        return tuple(outputs)

    def parse_json_file(self, json_file, allow_extra_keys=False):
        with open(json_file, encoding="utf-8") as f:
            return self.parse_dict(json.load(f), allow_extra_keys=allow_extra_keys)


def set_seed(seed, deterministic=False):
    """transformers' set_seed: seeds loom's generator, random and NumPy."""
    random.seed(seed)
    np.random.seed(seed % (2**32))
    _core.manual_seed(seed)
