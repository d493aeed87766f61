#!/usr/bin/env python3
"""Writes tests/fixtures/sft/parquet/*.parquet: the SFT fixtures of tests/fixtures/sft/*.jsonl as
Hugging Face `datasets` stores them on the Hub (Dataset.from_json, then its Arrow table written
by pyarrow), for loom's Parquet reader (src/io/parquet_rows.cpp) to give the same tokens.

- <stem>.parquet for every <stem>.jsonl, two rows per row group (so a reader must stream row
  groups): `messages` / `prompt` / `completion` become list<struct<role, content>>, text
  columns string;
- tokenized.parquet: TRL's pre-tokenized schema (`input_ids`, `completion_mask`, list<int64>),
  the ids of cases.json's prompt_completion case and its labels as the completion mask;
- wrong_column.parquet ({"body": string}) and wrong_type.parquet ({"text": int64}): bad input.

Usage (the venv of tools/make_packing_fixtures.py: datasets and pyarrow):
  /tmp/trlvenv/bin/python tools/make_parquet_fixtures.py
Written with datasets 5.2.0, pyarrow 26.0.1.
"""
import glob
import json
import os
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq
from datasets import Dataset

SFT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "sft")
OUT = os.path.join(SFT, "parquet")


def write(table, name):
    pq.write_table(table, os.path.join(OUT, name), row_group_size=2)


def main():
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as cache:
        for path in sorted(glob.glob(os.path.join(SFT, "*.jsonl"))):
            ds = Dataset.from_json(path, cache_dir=cache)
            write(ds.data.table, os.path.basename(path)[: -len(".jsonl")] + ".parquet")
    cases = json.load(open(os.path.join(SFT, "cases.json")))["cases"]
    c = cases["prompt_completion"]
    mask = [[int(l != -100) for l in labels] for labels in c["labels"]]
    write(pa.table({"input_ids": pa.array(c["input_ids"], pa.list_(pa.int64())),
                    "completion_mask": pa.array(mask, pa.list_(pa.int64()))}), "tokenized.parquet")
    write(pa.table({"body": ["a", "b"]}), "wrong_column.parquet")
    write(pa.table({"text": pa.array([1, 2], pa.int64())}), "wrong_type.parquet")


if __name__ == "__main__":
    main()
