"""loom.TrainingArguments: a dataclass generated from the C++ field table,
with transformers' names, defaults and validation (through the C++
validate()), HfArgumentParser and TrainingArguments(**json)."""

import dataclasses
import json
import typing

import pytest

import loom
from loom import _core
from conftest import optional_module


def test_is_a_dataclass_with_every_cpp_field_in_order():
    assert dataclasses.is_dataclass(loom.TrainingArguments)
    names = [f.name for f in dataclasses.fields(loom.TrainingArguments)]
    table = _core.training_args_fields()
    assert names == [name for name, _, _ in table]
    helps = {f.name: f.metadata["help"] for f in dataclasses.fields(loom.TrainingArguments)}
    assert helps["learning_rate"] == "Initial learning rate."
    types = {f.name: f.type for f in dataclasses.fields(loom.TrainingArguments)}
    assert types["learning_rate"] is float and types["max_steps"] is int
    assert types["save_total_limit"] == typing.Optional[int]


def test_transformers_defaults():
    args = loom.TrainingArguments(output_dir="out")
    assert args.learning_rate == 5e-5
    assert args.per_device_train_batch_size == 8
    assert args.num_train_epochs == 3.0
    assert args.max_steps == -1
    assert args.lr_scheduler_type == "linear"
    assert args.optim == "adamw_torch_fused"
    assert args.weight_decay == 0.0 and args.adam_beta2 == 0.999 and args.adam_epsilon == 1e-8
    assert args.save_total_limit is None and args.seed == 42
    assert args.eval_strategy == "no" and args.do_eval is False


def test_post_init_fills_derived_defaults():
    args = loom.TrainingArguments(output_dir="o", eval_strategy="steps", logging_steps=10,
                                  load_best_model_at_end=True, save_steps=10)
    assert args.do_eval is True  # set by an eval strategy
    assert args.eval_steps == 10  # falls back to logging_steps
    assert args.run_name == "o"
    assert args.metric_for_best_model == "loss" and args.greater_is_better is False
    assert args.logging_dir.startswith("o/runs/")


def test_bad_values_raise_loom_error_naming_the_argument():
    with pytest.raises(loom.LoomError, match=r"^\[TrainingArguments\] eval_strategy"):
        loom.TrainingArguments(eval_strategy="sometimes")
    with pytest.raises(ValueError, match=r"learning_rate: expected a number, got 'fast'"):
        loom.TrainingArguments(learning_rate="fast")
    with pytest.raises(loom.LoomError, match=r"max_steps: expected an integer, got '2.5'"):
        loom.TrainingArguments(max_steps=2.5)
    with pytest.raises(TypeError, match="lerning_rate"):
        loom.TrainingArguments(lerning_rate=1.0)


def test_from_json_round_trip():
    args = loom.TrainingArguments(output_dir="x", learning_rate=3e-4, report_to=["tensorboard"],
                                  save_total_limit=2)
    assert args.report_to == "tensorboard"  # a list is joined, as the C++ reader does
    again = loom.TrainingArguments(**json.loads(args.to_json_string()))
    assert again == args
    assert json.loads(args.to_json_string())["learning_rate"] == 3e-4


def test_hf_argument_parser():
    transformers = optional_module("transformers", "HfArgumentParser's test needs it")
    parser = transformers.HfArgumentParser(loom.TrainingArguments)
    (args,) = parser.parse_args_into_dataclasses(
        ["--output_dir", "hf_out", "--learning_rate", "3e-4", "--max_steps", "5",
         "--save_total_limit", "2", "--no_logging_nan_inf_filter", "--report_to", "none",
         "--disable_tqdm", "true"])
    assert isinstance(args, loom.TrainingArguments)
    assert (args.output_dir, args.learning_rate, args.max_steps) == ("hf_out", 3e-4, 5)
    assert args.save_total_limit == 2 and args.logging_nan_inf_filter is False
    assert args.disable_tqdm is True and args.report_to == "none"
    (args,) = parser.parse_dict({"output_dir": "d", "warmup_steps": 3})
    assert args.warmup_steps == 3
    with pytest.raises(ValueError, match="eval_strategy"):
        parser.parse_args_into_dataclasses(["--eval_strategy", "sometimes"])
