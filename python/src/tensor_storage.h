// Host memory shared between loom tensors and Python arrays, both ways:
// a loom buffer lent to NumPy/DLPack (an ndarray viewing it, kept alive by
// a capsule holding the buffer) and an outside array lent to loom (a Buffer
// whose memory is the array's, kept alive by a reference to it).
// Assumes the CPU device (host memory); a lazy tensor is synced first.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include "loom/tensor.h"

namespace loom::python {

/// The DLPack element type of `dtype` (bf16 as DLPack's bfloat, bool as kDLBool).
nanobind::dlpack::dtype to_dlpack(DType dtype);
/// The loom dtype of a DLPack element type; loom::Error "[from_dlpack] ..."
/// naming the type when loom has none (float64, uint8, complex, ...).
DType from_dlpack_dtype(nanobind::dlpack::dtype dtype, const char* op);

/// A read-only ndarray viewing `t`'s host bytes (syncing a lazy tensor,
/// with the GIL released), alive as long as the Python object made from it.
nanobind::ndarray<nanobind::ro> host_view(const Tensor& t);

/// A cpu tensor whose memory is `array`'s own (no copy), holding `array`
/// until the tensor's buffer is freed. loom::Error when `array` is not
/// C-contiguous host memory of a loom dtype.
Tensor wrap_host_array(const nanobind::ndarray<nanobind::ro>& array, const char* op);

}  // namespace loom::python
