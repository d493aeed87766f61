"""loom.tensor() and loom.from_numpy(): tensors from Python data.

``tensor(data)`` copies (as ``torch.tensor``); ``from_numpy(a)`` and
``from_dlpack(a)`` share the array's memory (as ``torch.from_numpy`` /
``torch.from_dlpack``). loom's dtypes are float32, bfloat16, float16, int32,
int64 and bool, named by strings (``loom.float32 == "float32"``). As in
PyTorch, Python floats and float64 arrays become float32 (torch's default
dtype) and other integer arrays int64, when no dtype is given.
"""

import numpy as np

from loom import _core

float32 = "float32"
bfloat16 = "bfloat16"
float16 = "float16"
int32 = "int32"
int64 = "int64"
bool_ = "bool"

_NUMPY_DTYPES = {
    float32: np.float32,
    float16: np.float16,
    int32: np.int32,
    int64: np.int64,
    bool_: np.bool_,
}


def _default_dtype(a):
    if a.dtype in (np.float32, np.float16, np.int32, np.int64, np.bool_):
        return a
    if a.dtype.kind == "f":
        return a.astype(np.float32)
    if a.dtype.kind in "iu":
        return a.astype(np.int64)
    raise _core.LoomError(f"[tensor] no loom dtype for numpy {a.dtype} "
                          "(loom has float32, bfloat16, float16, int32, int64, bool)")


def tensor(data, dtype=None, device=None):
    """A new tensor holding a copy of ``data``.

    ``data``: a NumPy array, a loom or other array with ``__array__`` /
    ``__dlpack__``, a (nested) list or a Python scalar. ``dtype``: one of
    loom's dtype names (default: from the data, see the module docstring).
    ``device``: ``"cpu"`` (default), ``"lazy"``, ``"lazy:xla"``, ...
    Raises LoomError for a dtype loom does not have.
    """
    if isinstance(data, _core.Tensor):
        data = data.numpy()
    a = np.asarray(data)
    if dtype is None:
        a = _default_dtype(a)
    elif dtype == bfloat16:
        t = _core.tensor(np.ascontiguousarray(a, dtype=np.float32), None).to(bfloat16)
        return t if device is None else t.to(device)
    elif dtype in _NUMPY_DTYPES:
        a = a.astype(_NUMPY_DTYPES[dtype], copy=False)
    else:
        raise _core.LoomError(f"[tensor] unknown dtype '{dtype}' (expected float32, bfloat16, "
                              "float16, int32, int64, bool)")
    return _core.tensor(np.ascontiguousarray(a), device)


def from_numpy(array):
    """A cpu tensor sharing ``array``'s memory (no copy); the array must be
    C-contiguous with one of loom's dtypes (LoomError otherwise)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected numpy.ndarray, got {type(array).__name__}")
    return _core.from_dlpack(array)
