"""What the Python Trainer accepts as data, turned into what the C++ job
takes (loom/job.h): a path (a .txt / .jsonl / .json / .csv file), rows in
memory (TRL's schemas: ``{"text"}``, ``{"messages"}``, ``{"prompt",
"completion"}``, or a table's text/label columns) handed over as JSON rows,
or pre-tokenized columns (``input_ids``, ``labels``, ``attention_mask``,
``token_type_ids``, ``label``) handed over as whole columns.

A Hugging Face ``datasets.Dataset`` is read through its columns
(``Dataset.to_dict()``, one call), never row by row; a list of dicts, a
dict of columns, a list of str (texts) and any sequence of dicts work too.
Also the collator names (``DataCollatorWithPadding``,
``DataCollatorForLanguageModeling(mlm=False)``, ``default_data_collator``)
and the tokenizer argument (``processing_class``) as a directory.
"""

import json
import os
import tempfile

from loom import _core

_TOKEN_COLUMNS = ("input_ids", "labels", "attention_mask", "token_type_ids")


class Rows:
    """One dataset as the job sees it: kind "file" (path), "text" / "json"
    (rows: list of str) or "tokens" (columns: dict name -> list)."""

    def __init__(self, kind, value, size):
        self.kind, self.value, self.size = kind, value, size


def _json_default(value):
    if hasattr(value, "tolist"):  # NumPy arrays and scalars, torch tensors
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _columns_of(dataset):
    """A dict of equal-length columns, or None when `dataset` is not tabular."""
    if hasattr(dataset, "column_names") and hasattr(dataset, "to_dict"):  # datasets.Dataset
        return dataset.to_dict()
    if isinstance(dataset, dict):
        return dict(dataset)
    if hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__"):
        rows = [dataset[i] for i in range(len(dataset))]
        if rows and all(isinstance(r, dict) for r in rows):
            keys = list(rows[0])
            for i, r in enumerate(rows):
                if list(r) != keys and set(r) != set(keys):
                    raise _core.LoomError(f"[dataset] row {i} has columns {sorted(r)}, "
                                          f"row 0 {sorted(keys)}")
            return {k: [r[k] for r in rows] for k in keys}
    return None


def _int_rows(column, name):
    out = []
    for i, row in enumerate(column):
        row = row.tolist() if hasattr(row, "tolist") else row
        if not isinstance(row, (list, tuple)):
            raise _core.LoomError(f"[dataset] row {i}: {name} is {type(row).__name__}, "
                                  "expected a list of ints")
        out.append(list(row))
    return out


def _tokens(columns):
    """Pre-tokenized columns as examples_dataset's arguments."""
    args = {}
    for name in _TOKEN_COLUMNS:
        if name in columns:
            col = columns[name]
            first = col[0] if len(col) else []
            first = first.tolist() if hasattr(first, "tolist") else first
            if name == "labels" and not isinstance(first, (list, tuple)):
                args["label"] = [int(v) for v in col]  # one class id per row
            else:
                args[name] = _int_rows(col, name)
    if "label" in columns:
        args["label"] = [int(v) for v in columns["label"]]
    return args


def to_rows(dataset, what):
    """`dataset` (see the module docstring) as Rows; LoomError naming `what`
    (train_dataset / eval_dataset) for anything else."""
    if dataset is None:
        return None
    if isinstance(dataset, (str, os.PathLike)):
        path = os.fspath(dataset)
        if not os.path.exists(path):
            raise _core.LoomError(f"[Trainer] {what} '{path}': no such file")
        return Rows("file", path, None)
    if isinstance(dataset, (list, tuple)) and dataset and all(isinstance(r, str) for r in dataset):
        return Rows("text", list(dataset), len(dataset))
    columns = _columns_of(dataset)
    if columns is None:
        raise _core.LoomError(f"[Trainer] {what}: expected a datasets.Dataset, a list of dicts, a "
                              f"dict of columns, a list of str or a path, got "
                              f"{type(dataset).__name__}")
    sizes = {len(v) for v in columns.values()}
    if len(sizes) > 1:
        raise _core.LoomError(f"[Trainer] {what}: columns of different lengths {sorted(sizes)}")
    size = sizes.pop() if sizes else 0
    if size == 0:
        raise _core.LoomError(f"[Trainer] {what} has no rows")
    if "input_ids" in columns:
        return Rows("tokens", _tokens(columns), size)
    keys = list(columns)
    rows = [json.dumps(dict(zip(keys, values)), default=_json_default, ensure_ascii=False)
            for values in zip(*columns.values())]
    return Rows("json", rows, size)


def job_data_fields(rows, split):
    """JobArguments fields for raw Rows: train_file / validation_file or
    train_rows / validation_rows."""
    if rows.kind == "file":
        return {("train_file" if split == "train" else "validation_file"): rows.value}
    return {("train_rows" if split == "train" else "validation_rows"): (rows.kind, rows.value)}


def tokens_dataset(rows):
    return _core.examples_dataset(**rows.value)


class DataCollatorWithPadding:
    """transformers' DataCollatorWithPadding: pads input_ids with the
    tokenizer's pad id, attention_mask with 0, per-token labels with -100."""
    _kind = "padding"

    def __init__(self, tokenizer=None, padding=True, max_length=None, pad_to_multiple_of=None,
                 return_tensors="pt"):
        self.tokenizer = tokenizer
        self.pad_to_multiple_of = pad_to_multiple_of or 0


class DataCollatorForLanguageModeling:
    """transformers' DataCollatorForLanguageModeling; loom takes mlm=False
    (labels = input_ids, -100 at padding). mlm=True: use the masked-lm task
    on raw text (the job's collator masks)."""
    _kind = "causal-lm"

    def __init__(self, tokenizer=None, mlm=True, mlm_probability=0.15, pad_to_multiple_of=None,
                 return_tensors="pt", **kwargs):
        if mlm:
            raise _core.LoomError("[DataCollatorForLanguageModeling] mlm=True on pre-tokenized "
                                  "rows is not supported: pass raw text with a masked-LM model")
        self.tokenizer = tokenizer
        self.pad_to_multiple_of = pad_to_multiple_of or 0


def default_data_collator(features, return_tensors="pt"):
    """transformers' default_data_collator: as a Trainer argument, loom stacks
    (and pads) in C++; calling it from Python is not supported."""
    raise _core.LoomError("[default_data_collator] loom collates in C++: pass it to Trainer")


def collator_of(data_collator, pad_id):
    """A C++ collator for a collator argument, or None (the default).
    transformers' own classes are recognized by name."""
    if data_collator is None:
        return None
    name = getattr(data_collator, "__name__", None) or type(data_collator).__name__
    if name == "default_data_collator" or name == "DataCollatorWithPadding":
        kind = "padding"
    elif name == "DataCollatorForLanguageModeling":
        if getattr(data_collator, "mlm", False):
            raise _core.LoomError("[Trainer] data_collator: DataCollatorForLanguageModeling with "
                                  "mlm=True on pre-tokenized rows is not supported")
        kind = "causal-lm"
    else:
        raise _core.LoomError(f"[Trainer] data_collator: {name} is not supported (loom collates in "
                              "C++: DataCollatorWithPadding, DataCollatorForLanguageModeling"
                              "(mlm=False) or default_data_collator)")
    multiple = getattr(data_collator, "pad_to_multiple_of", None) or 0
    return _core.make_collator(kind, pad_id, multiple)


def tokenizer_dir(processing_class, keep):
    """The directory of a tokenizer argument: a path or hub id, a loom
    tokenizer, or a transformers tokenizer (its name_or_path when that
    directory holds its files, else saved with save_pretrained into a
    temporary directory appended to `keep`). None stays None."""
    if processing_class is None:
        return None
    if isinstance(processing_class, (str, os.PathLike)):
        return _core.resolve_model_dir(os.fspath(processing_class))
    path = getattr(processing_class, "name_or_path", None)
    if isinstance(path, str) and os.path.isfile(os.path.join(path, "tokenizer.json")):
        return path
    if hasattr(processing_class, "save_pretrained"):
        tmp = tempfile.TemporaryDirectory(prefix="loom-tokenizer-")
        keep.append(tmp)
        processing_class.save_pretrained(tmp.name)
        return tmp.name
    if isinstance(path, str) and os.path.isdir(path):
        return path
    raise _core.LoomError(f"[Trainer] processing_class: expected a tokenizer or a directory, got "
                          f"{type(processing_class).__name__}")
