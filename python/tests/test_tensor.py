"""loom.Tensor from Python: NumPy in and out, DLPack both ways (zero-copy on
the host, checked by pointer), item/tolist/shape/dtype/device/to, errors."""

import gc

import numpy as np
import pytest

import loom
from conftest import optional_module


def ptr(a):
    return np.asarray(a).__array_interface__["data"][0]


def test_tensor_copies_numpy_values_shape_dtype_device():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = loom.tensor(a)
    assert t.shape == (2, 3)
    assert t.dtype == "float32" and t.device == "cpu" and t.ndim == 2 and t.numel() == 6
    np.testing.assert_array_equal(t.numpy(), a)
    assert ptr(t.numpy()) != ptr(a)  # a copy, as torch.tensor
    a[0, 0] = 100
    assert t.numpy()[0, 0] == 0


def test_default_dtypes_follow_torch():
    assert loom.tensor([1.5, 2.0]).dtype == "float32"  # float64 -> float32
    assert loom.tensor([1, 2]).dtype == "int64"
    assert loom.tensor(np.array([1, 2], np.uint8)).dtype == "int64"
    assert loom.tensor(np.array([1, 2], np.int32)).dtype == "int32"
    assert loom.tensor([True, False]).dtype == "bool"
    assert loom.tensor(np.float16(2)).dtype == "float16"
    assert loom.tensor([1, 2], dtype=loom.float32).dtype == "float32"


def test_item_and_tolist_give_python_types():
    f = loom.tensor(2.5).item()
    i = loom.tensor(7).item()
    b = loom.tensor(True).item()
    assert (f, type(f)) == (2.5, float)
    assert (i, type(i)) == (7, int)
    assert (b, type(b)) == (True, bool)
    assert loom.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert loom.tensor([0.5, 1.5]).tolist() == [0.5, 1.5]


def test_bfloat16_reads_as_float32():
    t = loom.tensor([1.5, -2.25, 3.0], dtype=loom.bfloat16)
    assert t.dtype == "bfloat16"
    n = t.numpy()
    assert n.dtype == np.float32
    np.testing.assert_array_equal(n, [1.5, -2.25, 3.0])  # exact in bf16


def test_array_protocol_and_ops_match_numpy():
    a = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    ta, tb = loom.tensor(a), loom.tensor(b)
    np.testing.assert_allclose(np.asarray(ta @ tb), a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(ta * 2.0 + 1.0), a * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose((ta - ta).numpy(), np.zeros_like(a))
    assert np.asarray(ta, dtype=np.float64).dtype == np.float64
    assert abs(ta.sum().item() - float(a.sum())) < 1e-4


def test_numpy_view_is_read_only_and_outlives_the_tensor():
    t = loom.tensor([1.0, 2.0, 3.0])
    v = t.numpy()
    assert not v.flags.writeable
    with pytest.raises(ValueError):
        v[0] = 5
    del t
    gc.collect()
    np.testing.assert_array_equal(v, [1.0, 2.0, 3.0])


def test_from_dlpack_shares_numpy_memory():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = loom.from_dlpack(a)
    assert t.shape == (3, 4) and t.dtype == "float32"
    assert ptr(t.numpy()) == ptr(a)  # zero-copy
    a[1, 2] = 42.0
    assert t.numpy()[1, 2] == 42.0
    np.testing.assert_array_equal((t * 1.0).numpy(), a)
    assert ptr(loom.from_numpy(a).numpy()) == ptr(a)


def test_from_dlpack_keeps_the_array_alive():
    t = loom.from_dlpack(np.full((1000,), 3.0, np.float32))
    gc.collect()
    assert t.sum().item() == 3000.0


def test_numpy_from_dlpack_shares_loom_memory():
    t = loom.tensor(np.arange(5, dtype=np.int64))
    assert t.__dlpack_device__() == (1, 0)  # kDLCPU
    n = np.from_dlpack(t)
    assert ptr(n) == ptr(t.numpy())
    np.testing.assert_array_equal(n, [0, 1, 2, 3, 4])
    del t
    gc.collect()
    np.testing.assert_array_equal(n, [0, 1, 2, 3, 4])


def test_from_dlpack_refuses_what_loom_cannot_share():
    with pytest.raises(loom.LoomError, match=r"\[from_dlpack\] no loom dtype for float64"):
        loom.from_dlpack(np.zeros(3))
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    with pytest.raises(loom.LoomError, match="not C-contiguous"):
        loom.from_dlpack(a.T)
    np.testing.assert_array_equal(loom.tensor(a.T).numpy(), a.T)  # tensor() copies


def test_torch_round_trip():
    torch = optional_module("torch", "the PyTorch DLPack round trip needs it")
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    t = loom.from_dlpack(x)
    assert ptr(t.numpy()) == x.data_ptr()
    y = torch.from_dlpack(t)
    assert y.data_ptr() == x.data_ptr()
    assert torch.equal(y, x)


def test_to_device_and_dtype():
    t = loom.tensor([1.0, 2.0])
    lz = t.to("lazy")
    assert lz.device == "lazy:cpu"
    assert lz.to("cpu").device == "cpu"
    assert t.to("int64").dtype == "int64"
    np.testing.assert_array_equal((lz * 3.0).numpy(), [3.0, 6.0])


def test_loom_error_is_a_value_error_with_the_cpp_message():
    assert issubclass(loom.LoomError, ValueError)
    with pytest.raises(loom.LoomError) as e:
        loom.tensor([1.0, 2.0]).item()
    assert str(e.value) == "[item] tensor with 2 elements cannot be converted to a scalar"
    with pytest.raises(ValueError, match=r"\[device\] unknown device 'cuda:x'"):
        loom.tensor([1.0]).to("cuda:x")
    with pytest.raises(loom.LoomError, match="no loom dtype for numpy complex128"):
        loom.tensor(np.zeros(2, np.complex128))
