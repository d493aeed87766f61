#!/usr/bin/env python3
"""Writes and checks the safetensors fixtures of tests/io/safetensors_test.cpp.

Assumes the reference library: `pip install safetensors numpy torch`
(writing uses safetensors.torch.save_file; --check needs only safetensors
and numpy).

  make_safetensors_fixtures.py              # (re)writes tests/fixtures/safetensors/
  make_safetensors_fixtures.py --check F    # reads F (written by loom) with the
                                            # Rust reader behind the Python library and
                                            # compares every tensor and the metadata
                                            # with the fixture content; exit 0 when equal

The values are also spelled out in tests/io/safetensors_test.cpp (kFixture...);
change both together. bf16/f16 values are given as bit patterns so the file
holds exactly these bits.
"""
import argparse
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "safetensors"

METADATA = {"format": "pt"}


def fixture_arrays():
    """name -> (safetensors dtype code, numpy array holding the stored bits)."""
    return {
        "a.f32": ("F32", np.array([[1.5, -2.25, 3.0e-8], [65504.0, -0.0, 1.0e30]], np.float32)),
        # bf16 bits: 1.0, -2.5, 0.15625, +inf
        "b.bf16": ("BF16", np.array([0x3F80, 0xC020, 0x3E20, 0x7F80], np.uint16)),
        # f16 bits: 1.0, -2.0, 65504, smallest subnormal (2^-24)
        "c.f16": ("F16", np.array([[0x3C00, 0xC000], [0x7BFF, 0x0001]], np.uint16)),
        "d.i32": ("I32", np.array([0, -1, 2147483647, -2147483648], np.int32)),
        "e.i64": ("I64", np.array([1, -(2**63), 2**63 - 1], np.int64)),
        "f.bool": ("BOOL", np.array([True, False, True], np.bool_)),
        "g.empty": ("F32", np.zeros((0, 3), np.float32)),
        "h.scalar": ("I64", np.array(42, np.int64)),
    }


# Names and metadata that exercise JSON string escaping (one metadata entry:
# the reference writes metadata from a hash map, in no fixed order).
ESCAPE_NAMES = ['q"uote', "back\\slash", "new\nline", "ctl\x01\x1f", "caf\u00e9", "tab\t/"]
ESCAPE_METADATA = {'k"ey': "v\u00e9\n"}


def to_torch(code, array):
    import torch

    if code == "BF16":
        return torch.from_numpy(array.view(np.int16).copy()).view(torch.bfloat16)
    if code == "F16":
        return torch.from_numpy(array.view(np.float16).copy())
    return torch.from_numpy(array.copy())


def write_fixtures():
    from safetensors.torch import save_file

    OUT.mkdir(parents=True, exist_ok=True)
    tensors = {name: to_torch(code, arr) for name, (code, arr) in fixture_arrays().items()}
    path = OUT / "python_all_dtypes.safetensors"
    save_file(tensors, str(path), metadata=METADATA)
    print(f"wrote {path} ({path.stat().st_size} bytes)")
    if check(path) != 0:
        sys.exit(1)

    import torch

    path = OUT / "python_escapes.safetensors"
    save_file({n: torch.tensor([2.0]) for n in ESCAPE_NAMES}, str(path), metadata=ESCAPE_METADATA)
    print(f"wrote {path} ({path.stat().st_size} bytes)")


def check(path):
    """Reads `path` with the reference reader; returns 0 if it holds the fixture."""
    from safetensors import deserialize, safe_open

    data = pathlib.Path(path).read_bytes()
    got = {name: info for name, info in deserialize(data)}
    want = fixture_arrays()
    errors = []
    if sorted(got) != sorted(want):
        errors.append(f"names {sorted(got)} != {sorted(want)}")
    for name, (code, arr) in want.items():
        info = got.get(name)
        if info is None:
            continue
        if info["dtype"] != code or list(info["shape"]) != list(arr.shape):
            errors.append(f"{name}: {info['dtype']} {info['shape']} != {code} {list(arr.shape)}")
        elif bytes(info["data"]) != arr.astype(arr.dtype.newbyteorder("<")).tobytes():
            errors.append(f"{name}: data differs")
    with safe_open(str(path), framework="numpy") as f:
        if f.metadata() != METADATA:
            errors.append(f"metadata {f.metadata()} != {METADATA}")
    for e in errors:
        print(f"{path}: {e}", file=sys.stderr)
    if not errors:
        print(f"{path}: OK, {len(got)} tensors match")
    return 1 if errors else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", metavar="FILE", help="check FILE instead of writing fixtures")
    args = parser.parse_args()
    if args.check:
        sys.exit(check(args.check))
    write_fixtures()


if __name__ == "__main__":
    main()
