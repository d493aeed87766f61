#!/usr/bin/env python3
"""Writes tests/fixtures/sft/packing.json: what TRL's pack_dataset makes of lists of sequence
lengths, for loom's packing (src/data/sft/sft_packing.cpp) to match row for row.

Each case: the bin capacity (SFTConfig.max_length), the strategy ("bfd" or "wrapped") and the
sequence lengths; sequence i is the token id i repeated length times, so TRL's packed rows say
which sequences went where. Written: per packed row, the sequence ids in order and their lengths
after truncation (bfd: TRL's seq_lengths), or (wrapped) the rows' token ids.

Usage (no torch needed: trl.data_utils uses datasets and pyarrow):
  python3 -m venv /tmp/trlvenv
  /tmp/trlvenv/bin/pip install --no-deps trl && /tmp/trlvenv/bin/pip install datasets transformers
  /tmp/trlvenv/bin/python tools/make_packing_fixtures.py
Written with trl 1.16.0, datasets (pyarrow's stable sort).
"""
import json
import os
import random

import trl
from datasets import Dataset
from trl.data_utils import pack_dataset

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "sft", "packing.json")


def bfd_case(capacity, lengths):
    ds = Dataset.from_dict({"input_ids": [[i] * n for i, n in enumerate(lengths)]})
    packed = pack_dataset(ds, capacity, strategy="bfd")
    rows = []
    for ids, seq_lengths in zip(packed["input_ids"], packed["seq_lengths"]):
        starts, at = [], 0
        for n in seq_lengths:
            starts.append(ids[at])
            at += n
        rows.append({"sequences": starts, "lengths": list(seq_lengths)})
    return {"strategy": "bfd", "capacity": capacity, "lengths": lengths, "rows": rows}


def wrapped_case(capacity, lengths):
    ds = Dataset.from_dict({"input_ids": [[i] * n for i, n in enumerate(lengths)]})
    packed = pack_dataset(ds, capacity, strategy="wrapped")
    return {"strategy": "wrapped", "capacity": capacity, "lengths": lengths,
            "rows": [{"input_ids": ids} for ids in packed["input_ids"]]}


def main():
    rng = random.Random(37)
    cases = [bfd_case(8, [5, 3, 7, 2, 4, 1]), bfd_case(8, [4, 4, 4, 4, 8, 1, 8])]
    # Many ties (lengths from a small set) and lengths above the capacity (cut).
    cases.append(bfd_case(16, [rng.choice([3, 5, 8, 13, 16, 20]) for _ in range(40)]))
    cases.append(bfd_case(64, [rng.randint(1, 80) for _ in range(120)]))
    cases.append(bfd_case(1024, [int(rng.lognormvariate(5, 0.8)) + 1 for _ in range(300)]))
    cases.append(wrapped_case(8, [5, 3, 7, 2, 4, 1]))
    with open(OUT, "w") as f:
        json.dump({"trl": trl.__version__, "cases": cases}, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {OUT}: {len(cases)} cases")


if __name__ == "__main__":
    main()
