#!/usr/bin/env python3
"""Writes tests/fixtures/ops.safetensors: PyTorch's outputs and gradients for
loom's ops, read by tests/ops/torch_fixture_test.cpp.

Assumes PyTorch and the safetensors library: `pip install torch numpy safetensors`
(CPU is enough).

  python3 tools/make_op_fixtures.py            # (re)writes tests/fixtures/ops.safetensors
  python3 tools/make_op_fixtures.py --list     # prints the cases, writes nothing

Regeneration is byte-identical for a given PyTorch version: each case seeds
PyTorch's generator with crc32(case name), PyTorch runs single-threaded, and
the file holds exactly one metadata entry (the safetensors writer emits
metadata from a hash map, so two entries could come out in either order).

File layout (safetensors, https://github.com/huggingface/safetensors):
  <case>.in<i>      the i-th operand, as loom receives it
  <case>.out        the output (<case>.out<j> for ops with several outputs)
  <case>.R          a fixed random tensor shaped like the output (.R<j>)
  <case>.grad<i>    d sum(out * R) / d in<i>, for each differentiable operand
  __metadata__["cases"]  JSON: {"torch": version, "cases": [{"name", "op",
                    "attrs", "inputs", "outputs", "grads"}, ...]}
`op` names a function of loom/ops.h (TORCH_OPS below holds the PyTorch
function each one is compared with); `attrs` are its non-tensor arguments.
The C++ test dispatches on the same names; a new op needs an entry in both.
Floating data is f32 unless a case says otherwise (bf16/f16 cast and matmul
cases store bf16/f16 tensors); indices are i64 or i32.
"""
import argparse
import json
import pathlib
import zlib

import torch
import torch.nn.functional as F

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "ops.safetensors"

DTYPES = {
    "f32": torch.float32,
    "bf16": torch.bfloat16,
    "f16": torch.float16,
    "i32": torch.int32,
    "i64": torch.int64,
    "bool": torch.bool,
}


def _axes(attrs):
    """Reduction axes: loom's empty list means all axes (PyTorch's None)."""
    axes = attrs.get("axes", [])
    return tuple(axes) if axes else None


def _slice(x, axis, start, end, step):
    index = [slice(None)] * x.dim()
    index[axis] = slice(start, end, step)
    return x[tuple(index)]


def _sdpa(q, k, v, mask=None, causal=False, scale=0.0):
    return F.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, is_causal=causal, scale=None if scale == 0 else scale
    )


def _cross_entropy(logits, target, ignore_index, label_smoothing):
    classes = logits.shape[-1]
    return F.cross_entropy(
        logits.reshape(-1, classes),
        target.reshape(-1).long(),
        ignore_index=ignore_index,
        label_smoothing=label_smoothing,
    )


def _py_scalar(s):
    """A C++ number as PyTorch's Python scalar: loom treats an integral value
    as a Python int (it keeps an integer tensor's dtype; bool becomes int64)
    and any other as a Python float (an integer or bool tensor becomes f32)."""
    return int(s) if float(s).is_integer() else float(s)


# op name (as in loom/ops.h) -> PyTorch reference: fn(inputs, attrs).
TORCH_OPS = {
    "neg": lambda x, a: torch.neg(x[0]),
    "abs": lambda x, a: torch.abs(x[0]),
    "sign": lambda x, a: torch.sign(x[0]),
    "exp": lambda x, a: torch.exp(x[0]),
    "log": lambda x, a: torch.log(x[0]),
    "sqrt": lambda x, a: torch.sqrt(x[0]),
    "rsqrt": lambda x, a: torch.rsqrt(x[0]),
    "tanh": lambda x, a: torch.tanh(x[0]),
    "erf": lambda x, a: torch.erf(x[0]),
    "sigmoid": lambda x, a: torch.sigmoid(x[0]),
    "relu": lambda x, a: torch.relu(x[0]),
    "sin": lambda x, a: torch.sin(x[0]),
    "cos": lambda x, a: torch.cos(x[0]),
    "gelu": lambda x, a: F.gelu(x[0], approximate=a["approximate"]),
    # grad * gelu'(x); its gradients are torch's double backward of GELU.
    "gelu_backward": lambda x, a: torch.ops.aten.gelu_backward(
        x[0], x[1], approximate=a["approximate"]
    ),
    "pow_scalar": lambda x, a: torch.pow(x[0], a["exponent"]),
    "cast": lambda x, a: x[0].to(DTYPES[a["dtype"]]),
    "add": lambda x, a: torch.add(x[0], x[1]),
    "sub": lambda x, a: torch.sub(x[0], x[1]),
    "mul": lambda x, a: torch.mul(x[0], x[1]),
    "div": lambda x, a: torch.div(x[0], x[1]),
    "maximum": lambda x, a: torch.maximum(x[0], x[1]),
    "minimum": lambda x, a: torch.minimum(x[0], x[1]),
    "pow": lambda x, a: torch.pow(x[0], x[1]),
    "add_scalar": lambda x, a: x[0] + _py_scalar(a["scalar"]),
    "sub_scalar": lambda x, a: x[0] - _py_scalar(a["scalar"]),
    "mul_scalar": lambda x, a: x[0] * _py_scalar(a["scalar"]),
    "div_scalar": lambda x, a: x[0] / _py_scalar(a["scalar"]),
    # A rank-0 tensor promotes as a Python scalar does (torch.result_type).
    "maximum_scalar": lambda x, a: torch.maximum(x[0], torch.tensor(_py_scalar(a["scalar"]))),
    "minimum_scalar": lambda x, a: torch.minimum(x[0], torch.tensor(_py_scalar(a["scalar"]))),
    "eq": lambda x, a: torch.eq(x[0], x[1]),
    "ne": lambda x, a: torch.ne(x[0], x[1]),
    "lt": lambda x, a: torch.lt(x[0], x[1]),
    "le": lambda x, a: torch.le(x[0], x[1]),
    "gt": lambda x, a: torch.gt(x[0], x[1]),
    "ge": lambda x, a: torch.ge(x[0], x[1]),
    "gt_scalar": lambda x, a: torch.gt(x[0], _py_scalar(a["scalar"])),
    "where": lambda x, a: torch.where(x[0], x[1], x[2]),
    "where_scalar": lambda x, a: torch.where(x[0], x[1], _py_scalar(a["scalar"])),
    "sum": lambda x, a: torch.sum(x[0], dim=_axes(a), keepdim=a["keepdim"]),
    "mean": lambda x, a: torch.mean(x[0], dim=_axes(a), keepdim=a["keepdim"]),
    "max": lambda x, a: torch.amax(x[0], dim=_axes(a) or (), keepdim=a["keepdim"]),
    "min": lambda x, a: torch.amin(x[0], dim=_axes(a) or (), keepdim=a["keepdim"]),
    "var": lambda x, a: torch.var(
        x[0], dim=_axes(a), correction=a["correction"], keepdim=a["keepdim"]
    ),
    "argmax": lambda x, a: torch.argmax(x[0], dim=a["axis"], keepdim=a["keepdim"]),
    "matmul": lambda x, a: torch.matmul(
        x[0].mT if a["trans_a"] else x[0], x[1].mT if a["trans_b"] else x[1]
    ),
    "reshape": lambda x, a: torch.reshape(x[0], a["shape"]),
    "flatten": lambda x, a: torch.flatten(x[0], a["start"], a["end"]),
    "permute": lambda x, a: torch.permute(x[0], a["perm"]),
    "transpose": lambda x, a: torch.transpose(x[0], a["axis0"], a["axis1"]),
    "unsqueeze": lambda x, a: torch.unsqueeze(x[0], a["axis"]),
    "squeeze": lambda x, a: torch.squeeze(x[0], a["axis"]),
    "slice": lambda x, a: _slice(x[0], a["axis"], a["start"], a["end"], a["step"]),
    "concat": lambda x, a: torch.cat(x, dim=a["axis"]),
    "split": lambda x, a: list(torch.split(x[0], a.get("split_size", a.get("sizes")), a["axis"])),
    "expand": lambda x, a: x[0].expand(a["shape"]),
    "gather": lambda x, a: torch.gather(x[0], a["axis"], x[1].long()),
    "index_select": lambda x, a: torch.index_select(x[0], a["axis"], x[1].long()),
    "index_add": lambda x, a: x[0].index_add(a["axis"], x[1].long(), x[2]),
    "index_copy": lambda x, a: x[0].index_copy(a["axis"], x[1].long(), x[2]),
    "scatter_add": lambda x, a: x[0].scatter_add(a["axis"], x[1].long(), x[2]),
    "embedding": lambda x, a: F.embedding(x[1].long(), x[0]),
    "one_hot": lambda x, a: F.one_hot(x[0].long(), a["num_classes"]),
    "softmax": lambda x, a: torch.softmax(x[0], a["axis"]),
    "log_softmax": lambda x, a: torch.log_softmax(x[0], a["axis"]),
    "layer_norm": lambda x, a: F.layer_norm(x[0], (x[0].shape[-1],), x[1], x[2], a["eps"]),
    "cross_entropy": lambda x, a: _cross_entropy(
        x[0], x[1], a["ignore_index"], a["label_smoothing"]
    ),
    "scaled_dot_product_attention": lambda x, a: _sdpa(
        *x, causal=a["causal"], scale=a["scale"]
    ),
    "arange": lambda x, a: torch.arange(
        a["start"], a["end"], a["step"], dtype=DTYPES[a["dtype"]]
    ),
    "full": lambda x, a: torch.full(a["shape"], a["value"], dtype=DTYPES[a["dtype"]]),
}


# ---- Input helpers (draw from PyTorch's global generator, seeded per case). ----


def randn(*shape, dtype=torch.float32):
    return torch.randn(shape).to(dtype)


def uniform(lo, hi, *shape):
    return torch.rand(shape) * (hi - lo) + lo


def randint(lo, hi, *shape, dtype=torch.int64):
    return torch.randint(lo, hi, shape).to(dtype)


def small_ints(*shape):
    """Floats that are small integers, so comparisons and maxima have ties."""
    return torch.randint(-2, 3, shape).float()


def f32(values):
    return torch.tensor(values, dtype=torch.float32)


def i64(values):
    return torch.tensor(values, dtype=torch.int64)


# ---- The cases. Each: name, op, a function making the inputs, attrs, and the
# indices of the operands that get gradients (None: every floating operand). ----

CASES = []


def case(name, op, make_inputs, attrs=None, grads=None):
    CASES.append((name, op, make_inputs, attrs or {}, grads))


def unary_cases():
    pos = lambda: [uniform(0.2, 3.0, 3, 5)]  # noqa: E731
    any_ = lambda: [randn(3, 5) * 2]  # noqa: E731
    for op in ["neg", "abs", "exp", "tanh", "erf", "sigmoid", "relu", "sin", "cos"]:
        case(f"{op}_f32", op, any_)
    for op in ["log", "sqrt", "rsqrt"]:
        case(f"{op}_f32", op, pos)
    # PyTorch's derivatives at 0: relu'(0) = 0, |x|'(0) = sign(0) = 0.
    case("relu_zero", "relu", lambda: [f32([-1.0, 0.0, 2.0, -0.0])])
    case("abs_zero", "abs", lambda: [f32([-1.5, 0.0, 2.0, -0.0])])
    # sign is not differentiable in loom (kNondiff); PyTorch's gradient is 0.
    case("sign_f32", "sign", lambda: [f32([-2.5, 0.0, 3.0, -0.0, 1e-30])], grads=[])
    case("gelu_exact", "gelu", lambda: [randn(4, 7) * 3], {"approximate": "none"})
    case("gelu_tanh", "gelu", lambda: [randn(4, 7) * 3], {"approximate": "tanh"})
    gelu_grad = lambda: [randn(4, 7), randn(4, 7) * 3]  # noqa: E731  (grad, x)
    case("gelu_backward_exact", "gelu_backward", gelu_grad, {"approximate": "none"})
    case("gelu_backward_tanh", "gelu_backward", gelu_grad, {"approximate": "tanh"})
    bf = torch.bfloat16
    case("gelu_backward_tanh_bf16", "gelu_backward",
         lambda: [randn(3, 5, dtype=bf), (randn(3, 5) * 3).to(bf)], {"approximate": "tanh"},
         grads=[])
    for tag, e in [("2", 2.0), ("3", 3.0), ("half", 0.5), ("m1_5", -1.5)]:
        make = any_ if e in (2.0, 3.0) else pos
        case(f"pow_scalar_{tag}", "pow_scalar", make, {"exponent": e})
    # Float math on integers gives f32; abs/neg keep the integer dtype.
    case("exp_i64", "exp", lambda: [randint(-3, 4, 2, 3)])
    case("abs_i64", "abs", lambda: [randint(-5, 6, 2, 3)])
    case("neg_i32", "neg", lambda: [randint(-5, 6, 7, dtype=torch.int32)])


def cast_cases():
    # Ties, overflow, NaN/inf and subnormals exercise round-to-nearest-even.
    ties = f32(
        [1.0, 1.00390625, 1.01171875, 1.0078125 + 2**-24, -3.14159, 65504.0, 65520.0,
         3.4e38, float("inf"), float("-inf"), float("nan"), 1e-40, 6e-8, -0.0, 2.5e-5, 1e5]
    )
    case("cast_f32_bf16", "cast", lambda: [ties], {"dtype": "bf16"}, grads=[])
    case("cast_f32_f16", "cast", lambda: [ties], {"dtype": "f16"}, grads=[])
    case("cast_f32_bf16_grad", "cast", lambda: [randn(3, 4)], {"dtype": "bf16"})
    case("cast_bf16_f32", "cast", lambda: [randn(3, 4, dtype=torch.bfloat16)], {"dtype": "f32"})
    case("cast_f16_f32", "cast", lambda: [randn(3, 4, dtype=torch.float16)], {"dtype": "f32"})
    trunc = lambda: [f32([-2.7, -2.5, -0.5, 0.0, 0.9, 1.5, 2.5, 1e6 + 0.75, -123456.9])]  # noqa
    case("cast_f32_i32", "cast", trunc, {"dtype": "i32"})
    case("cast_f32_i64", "cast", trunc, {"dtype": "i64"})
    case("cast_f32_bool", "cast", lambda: [f32([0.0, -0.0, 1e-30, -2.0, float("nan")])],
         {"dtype": "bool"})
    case("cast_bool_f32", "cast", lambda: [torch.tensor([True, False, True])], {"dtype": "f32"})
    case("cast_i64_f32", "cast", lambda: [i64([-3, 0, 16777217, 2**40 + 1])], {"dtype": "f32"})
    case("cast_i64_i32", "cast", lambda: [i64([-3, 0, 7, 2**31 - 1])], {"dtype": "i32"})


def binary_cases():
    shapes = [("same", (3, 4), (3, 4)), ("bcast", (2, 3, 4), (3, 1)),
              ("bcast_rank", (4,), (2, 1, 4)), ("rank0", (2, 3), ())]
    for op in ["add", "sub", "mul", "div", "maximum", "minimum"]:
        for tag, sa, sb in shapes:
            if op in ("maximum", "minimum") and tag == "bcast_rank":
                continue
            b = (lambda s: (lambda: uniform(0.5, 2.0, *s)))(sb) if op == "div" else None
            make = (lambda sa, sb, b: lambda: [randn(*sa), b() if b else randn(*sb)])(sa, sb, b)
            case(f"{op}_{tag}", op, make)
    case("pow_same", "pow", lambda: [uniform(0.3, 2.0, 3, 4), randn(3, 4)])
    case("pow_bcast", "pow", lambda: [uniform(0.3, 2.0, 2, 3, 1), uniform(-1, 2, 4)])
    # Ties split the gradient evenly (torch.maximum / torch.minimum).
    case("maximum_ties", "maximum", lambda: [small_ints(3, 4), small_ints(3, 4)])
    case("minimum_ties", "minimum", lambda: [small_ints(3, 4), small_ints(4)])
    nan = float("nan")
    with_nan = lambda: [f32([1.0, nan, 3.0, nan]), f32([2.0, 0.0, nan, 1.0])]  # noqa: E731
    case("maximum_nan", "maximum", with_nan, grads=[])
    case("minimum_nan", "minimum", with_nan, grads=[])
    # Type promotion (torch.result_type).
    case("add_i64_f32", "add", lambda: [randint(-5, 5, 2, 3), randn(3)])
    case("add_i32_i64", "add", lambda: [randint(-5, 5, 3, dtype=torch.int32), randint(-5, 5, 2, 3)])
    case("mul_bf16_f32", "mul", lambda: [randn(2, 3, dtype=torch.bfloat16), randn(2, 3)])
    case("div_i64_i64", "div", lambda: [randint(-9, 9, 2, 3), randint(1, 4, 3)])
    case("add_bool_bool", "add", lambda: [torch.tensor([True, False]), torch.tensor([True, True])])
    # A C++ number next to a tensor (a Python scalar in PyTorch).
    for op, s in [("add", 2.5), ("sub", -1.25), ("mul", -3.0), ("div", 4.0), ("maximum", 0.25),
                  ("minimum", -0.5)]:
        case(f"{op}_scalar", f"{op}_scalar", lambda: [randn(3, 4)], {"scalar": s})
    case("add_scalar_i64_frac", "add_scalar", lambda: [randint(-5, 5, 2, 3)], {"scalar": 2.5})
    case("mul_scalar_i64_int", "mul_scalar", lambda: [randint(-5, 5, 2, 3)], {"scalar": 3.0})
    case("div_scalar_i64", "div_scalar", lambda: [randint(-5, 5, 2, 3)], {"scalar": 2.0})
    case("add_scalar_i32", "add_scalar", lambda: [randint(-5, 5, 4, dtype=torch.int32)],
         {"scalar": -7.0})
    case("add_scalar_bool", "add_scalar", lambda: [torch.tensor([True, False])], {"scalar": 1.0})
    case("mul_scalar_bool_frac", "mul_scalar", lambda: [torch.tensor([True, False])],
         {"scalar": 0.5})
    case("maximum_scalar_i64", "maximum_scalar", lambda: [randint(-5, 5, 2, 3)], {"scalar": 1.0})


def compare_cases():
    def make():
        a = small_ints(3, 4)
        a[0, 0] = float("nan")
        b = small_ints(4)
        return [a, b]

    for op in ["eq", "ne", "lt", "le", "gt", "ge"]:
        case(f"{op}_bcast", op, make)
    case("lt_i64_f32", "lt", lambda: [randint(-3, 3, 2, 4), small_ints(4) + 0.5])
    case("gt_scalar", "gt_scalar", lambda: [small_ints(3, 4)], {"scalar": 0.0})
    case("where_bcast", "where",
         lambda: [torch.rand(3, 1) > 0.5, randn(3, 4), randn(4)])
    case("where_full", "where",
         lambda: [torch.rand(2, 3, 4) > 0.5, randn(2, 3, 4), randn(2, 3, 4)])
    case("where_scalar", "where_scalar", lambda: [torch.rand(3, 4) > 0.5, randn(3, 4)],
         {"scalar": -1.5})
    case("where_i64_f32", "where",
         lambda: [torch.rand(2, 3) > 0.5, randint(-5, 5, 2, 3), randn(2, 3)])


def reduce_cases():
    x = lambda: [randn(2, 3, 5)]  # noqa: E731
    for op in ["sum", "mean", "max", "min"]:
        for tag, axes, keep in [("all", [], False), ("last", [-1], False),
                                ("first_keep", [0], True), ("two", [0, 2], False),
                                ("two_keep", [2, 0], True)]:
            case(f"{op}_{tag}", op, x, {"axes": axes, "keepdim": keep})
    case("sum_i32", "sum", lambda: [randint(-9, 9, 3, 4, dtype=torch.int32)],
         {"axes": [1], "keepdim": False})
    case("sum_bool", "sum", lambda: [torch.rand(3, 4) > 0.5], {"axes": [], "keepdim": False})
    case("max_i64", "max", lambda: [randint(-9, 9, 3, 4)], {"axes": [1], "keepdim": False})
    # amax/amin split the gradient evenly among equal maxima.
    case("max_ties", "max", lambda: [small_ints(4, 6)], {"axes": [1], "keepdim": False})
    case("min_ties_all", "min", lambda: [small_ints(3, 4)], {"axes": [], "keepdim": True})
    case("max_nan", "max", lambda: [f32([[1.0, float("nan"), 3.0], [0.0, 2.0, -1.0]])],
         {"axes": [1], "keepdim": False}, grads=[])
    for tag, axes, corr, keep in [("all_c1", [], 1, False), ("last_c1", [-1], 1, False),
                                  ("last_c0_keep", [2], 0, True), ("two_c1", [0, 2], 1, False),
                                  ("first_c2", [0], 2, False)]:
        case(f"var_{tag}", "var", lambda: [randn(3, 4, 5) + 3],
             {"axes": axes, "correction": corr, "keepdim": keep})
    case("argmax_last", "argmax", lambda: [randn(3, 7)], {"axis": -1, "keepdim": False})
    case("argmax_first_keep", "argmax", lambda: [randn(4, 3, 2)], {"axis": 0, "keepdim": True})
    # The first of equal maxima wins; NaN counts as the maximum.
    case("argmax_ties", "argmax", lambda: [small_ints(5, 6)], {"axis": 1, "keepdim": False})
    case("argmax_nan", "argmax", lambda: [f32([[1.0, float("nan"), 3.0], [5.0, 2.0, 5.0]])],
         {"axis": 1, "keepdim": False})
    case("argmax_i64", "argmax", lambda: [randint(-3, 3, 2, 5)], {"axis": 1, "keepdim": False})


def matmul_cases():
    flags = {"trans_a": False, "trans_b": False}
    case("matmul_2d", "matmul", lambda: [randn(3, 5), randn(5, 4)], flags)
    case("matmul_ta", "matmul", lambda: [randn(5, 3), randn(5, 4)], {**flags, "trans_a": True})
    case("matmul_tb", "matmul", lambda: [randn(3, 5), randn(4, 5)], {**flags, "trans_b": True})
    case("matmul_ta_tb", "matmul", lambda: [randn(5, 3), randn(4, 5)],
         {"trans_a": True, "trans_b": True})
    case("matmul_batched", "matmul", lambda: [randn(2, 3, 5), randn(2, 5, 4)], flags)
    case("matmul_bcast_batch", "matmul", lambda: [randn(2, 1, 3, 5), randn(3, 5, 4)], flags)
    case("matmul_bcast_rank2", "matmul", lambda: [randn(2, 3, 5), randn(4, 5)],
         {**flags, "trans_b": True})
    case("matmul_batched_ta", "matmul", lambda: [randn(2, 5, 3), randn(1, 5, 4)],
         {**flags, "trans_a": True})
    case("matmul_k1", "matmul", lambda: [randn(3, 1), randn(1, 4)], flags)
    bf = torch.bfloat16
    case("matmul_bf16", "matmul", lambda: [randn(4, 16, dtype=bf), randn(16, 8, dtype=bf)], flags)
    case("matmul_bf16_batched_tb", "matmul",
         lambda: [randn(2, 3, 16, dtype=bf), randn(2, 5, 16, dtype=bf)], {**flags, "trans_b": True})


def shape_cases():
    x = lambda: [randn(2, 3, 4)]  # noqa: E731
    case("reshape", "reshape", x, {"shape": [4, -1]})
    case("flatten", "flatten", x, {"start": 1, "end": -1})
    case("permute", "permute", x, {"perm": [2, 0, 1]})
    case("transpose", "transpose", x, {"axis0": -1, "axis1": 0})
    case("unsqueeze", "unsqueeze", x, {"axis": -1})
    case("squeeze", "squeeze", lambda: [randn(2, 1, 3)], {"axis": 1})
    for tag, axis, start, end, step in [("basic", 1, 1, 3, 1), ("step", 2, 0, 4, 2),
                                        ("neg", -1, -3, -1, 1), ("clamp", 0, -10, 10, 1),
                                        ("step3", 1, 1, 100, 3), ("empty", 2, 3, 1, 1)]:
        case(f"slice_{tag}", "slice", lambda: [randn(3, 7, 4)],
             {"axis": axis, "start": start, "end": end, "step": step})
    case("concat_axis1", "concat", lambda: [randn(2, 1, 3), randn(2, 4, 3), randn(2, 2, 3)],
         {"axis": 1})
    case("concat_neg", "concat", lambda: [randn(2, 3), randn(2, 1)], {"axis": -1})
    case("split_size", "split", lambda: [randn(7, 3)], {"split_size": 3, "axis": 0})
    case("split_sizes", "split", lambda: [randn(2, 6)], {"sizes": [1, 0, 5], "axis": -1})
    case("expand", "expand", lambda: [randn(3, 1)], {"shape": [2, -1, 4]})
    case("expand_scalar", "expand", lambda: [randn()], {"shape": [2, 3]})


def index_cases():
    case("gather_axis0", "gather", lambda: [randn(4, 3), randint(0, 4, 5, 3)], {"axis": 0})
    case("gather_axis1", "gather", lambda: [randn(3, 5), randint(0, 5, 3, 2)], {"axis": 1})
    case("index_select_axis0", "index_select", lambda: [randn(5, 3), i64([4, 0, 4, 2])],
         {"axis": 0})
    case("index_select_axis1_i32", "index_select",
         lambda: [randn(2, 5, 3), torch.tensor([1, 1, 3], dtype=torch.int32)], {"axis": 1})
    case("index_add", "index_add", lambda: [randn(5, 3), i64([0, 2, 0, 4]), randn(4, 3)],
         {"axis": 0})
    case("index_add_axis1", "index_add", lambda: [randn(2, 4), i64([3, 3, 1]), randn(2, 3)],
         {"axis": 1})
    case("index_copy", "index_copy", lambda: [randn(5, 3), i64([3, 0]), randn(2, 3)],
         {"axis": 0})
    case("index_copy_cache_rows", "index_copy",
         lambda: [randn(1, 2, 6, 4), i64([2, 3]), randn(1, 2, 2, 4)], {"axis": 2})
    case("scatter_add", "scatter_add",
         lambda: [randn(4, 3), randint(0, 4, 5, 3), randn(5, 3)], {"axis": 0})
    case("scatter_add_axis1", "scatter_add",
         lambda: [randn(3, 6), randint(0, 6, 2, 4), randn(2, 4)], {"axis": 1})
    case("embedding", "embedding", lambda: [randn(6, 4), i64([[0, 5, 2], [2, 2, 1]])])
    case("embedding_i32", "embedding",
         lambda: [randn(5, 3), torch.tensor([4, 0, 4, 4], dtype=torch.int32)])
    case("one_hot", "one_hot", lambda: [i64([[0, 3], [2, 2]])], {"num_classes": 4})
    case("one_hot_i32", "one_hot", lambda: [torch.tensor([1, 0, 4], dtype=torch.int32)],
         {"num_classes": 5})


def nn_cases():
    case("softmax_last", "softmax", lambda: [randn(3, 6) * 3], {"axis": -1})
    case("softmax_axis0", "softmax", lambda: [randn(4, 3, 2)], {"axis": 0})
    case("softmax_large", "softmax", lambda: [randn(2, 5) * 10 + 1000], {"axis": 1})
    case("softmax_neg_inf", "softmax",
         lambda: [f32([[0.5, float("-inf"), 1.0], [float("-inf"), 2.0, -1.0]])], {"axis": -1})
    case("log_softmax_last", "log_softmax", lambda: [randn(3, 6) * 3], {"axis": -1})
    case("log_softmax_axis1", "log_softmax", lambda: [randn(2, 4, 3)], {"axis": 1})
    case("log_softmax_large", "log_softmax", lambda: [randn(2, 5) * 10 - 500], {"axis": -1})
    case("layer_norm", "layer_norm", lambda: [randn(2, 3, 8) * 2 + 1, randn(8), randn(8)],
         {"eps": 1e-5})
    case("layer_norm_eps", "layer_norm", lambda: [randn(4, 5), randn(5), randn(5)], {"eps": 0.1})
    ce = {"ignore_index": -100, "label_smoothing": 0.0}
    case("cross_entropy", "cross_entropy", lambda: [randn(6, 5) * 2, randint(0, 5, 6)], ce)
    case("cross_entropy_ignore", "cross_entropy",
         lambda: [randn(2, 3, 5), i64([[1, -100, 4], [0, 3, -100]])], ce)
    case("cross_entropy_smooth", "cross_entropy",
         lambda: [randn(2, 3, 7) * 2, i64([[6, -100, 0], [2, 2, -100]])],
         {**ce, "label_smoothing": 0.1})
    case("cross_entropy_all_ignored", "cross_entropy",
         lambda: [randn(3, 4), i64([-100, -100, -100])], {**ce, "label_smoothing": 0.1})
    case("cross_entropy_ignore_other", "cross_entropy",
         lambda: [randn(4, 3), i64([2, 0, 0, 1])], {**ce, "ignore_index": 0})
    case("cross_entropy_i32", "cross_entropy",
         lambda: [randn(4, 3), torch.tensor([2, 0, 1, 1], dtype=torch.int32)], ce)
    attn = {"causal": False, "scale": 0.0}
    qkv = lambda t, s: [randn(2, 2, t, 4), randn(2, 2, s, 4), randn(2, 2, s, 3)]  # noqa: E731
    case("sdpa", "scaled_dot_product_attention", lambda: qkv(3, 5), attn)
    case("sdpa_causal", "scaled_dot_product_attention", lambda: qkv(4, 4),
         {**attn, "causal": True})
    case("sdpa_causal_rect", "scaled_dot_product_attention", lambda: qkv(3, 5),
         {**attn, "causal": True})
    case("sdpa_scale", "scaled_dot_product_attention", lambda: qkv(3, 3), {**attn, "scale": 0.3})

    def padding():
        mask = torch.tensor([[True, True, True, False, False], [True, True, True, True, True]])
        return qkv(3, 5) + [mask.reshape(2, 1, 1, 5)]

    case("sdpa_bool_mask", "scaled_dot_product_attention", padding, attn, grads=[0, 1, 2])
    case("sdpa_float_mask", "scaled_dot_product_attention",
         lambda: qkv(3, 5) + [randn(3, 5)], attn, grads=[0, 1, 2, 3])
    case("sdpa_3d", "scaled_dot_product_attention",
         lambda: [randn(2, 4, 8), randn(2, 4, 8), randn(2, 4, 8)], attn)


def factory_cases():
    case("arange_float", "arange", lambda: [],
         {"start": 0.0, "end": 1.0, "step": 0.1, "dtype": "f32"})
    case("arange_neg_step", "arange", lambda: [],
         {"start": 5.0, "end": -2.0, "step": -1.5, "dtype": "f32"})
    case("arange_i64", "arange", lambda: [],
         {"start": -3.0, "end": 7.0, "step": 2.0, "dtype": "i64"})
    case("full_f32", "full", lambda: [], {"shape": [2, 3], "value": -0.1, "dtype": "f32"})
    case("full_bf16", "full", lambda: [], {"shape": [3], "value": 0.1, "dtype": "bf16"})
    case("full_i32", "full", lambda: [], {"shape": [2, 2], "value": 7.0, "dtype": "i32"})


# ---- Running the cases. ----


def packed(t):
    """A contiguous copy sharing no memory (the safetensors writer refuses
    views and tensors that share storage)."""
    return t.clone(memory_format=torch.contiguous_format)


def run_case(name, op, make_inputs, attrs, grads):
    """Returns (tensors, record) for one case."""
    torch.manual_seed(zlib.crc32(name.encode()))
    inputs = [t.contiguous() for t in make_inputs()]
    if grads is None:
        grads = [i for i, t in enumerate(inputs) if t.is_floating_point()]
    leaves = [t.detach().clone().requires_grad_(i in grads) for i, t in enumerate(inputs)]
    result = TORCH_OPS[op](leaves, attrs)
    outputs = result if isinstance(result, list) else [result]
    if not any(out.requires_grad for out in outputs):
        grads = []  # integer or bool results (argmax, comparisons, casts to ints)
    tensors = {f"{name}.in{i}": packed(t) for i, t in enumerate(inputs)}
    suffix = (lambda j: "") if len(outputs) == 1 else str
    for j, out in enumerate(outputs):
        tensors[f"{name}.out{suffix(j)}"] = packed(out.detach())
    if grads:
        loss = 0
        for j, out in enumerate(outputs):
            r = torch.randn(out.shape).to(out.dtype)
            tensors[f"{name}.R{suffix(j)}"] = r
            loss = loss + (out * r).sum()
        loss.backward()
        for i in grads:
            tensors[f"{name}.grad{i}"] = packed(leaves[i].grad)
    record = {"name": name, "op": op, "attrs": attrs, "inputs": len(inputs),
              "outputs": len(outputs), "grads": grads}
    return tensors, record


def build():
    for make in [unary_cases, cast_cases, binary_cases, compare_cases, reduce_cases,
                 matmul_cases, shape_cases, index_cases, nn_cases, factory_cases]:
        make()
    names = [c[0] for c in CASES]
    assert len(names) == len(set(names)), "duplicate case names"
    tensors, records = {}, []
    for c in CASES:
        t, r = run_case(*c)
        tensors.update(t)
        records.append(r)
    meta = {"torch": torch.__version__, "cases": records}
    return tensors, json.dumps(meta, sort_keys=True, separators=(",", ":"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print the cases, write nothing")
    args = parser.parse_args()
    torch.set_num_threads(1)
    tensors, meta = build()
    if args.list:
        for record in json.loads(meta)["cases"]:
            print(record["name"], record["op"], json.dumps(record["attrs"]))
        return
    from safetensors.torch import save_file

    OUT.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(OUT), metadata={"cases": meta})
    print(f"wrote {OUT.relative_to(ROOT)}: {len(json.loads(meta)['cases'])} cases, "
          f"{len(tensors)} tensors, {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main()
