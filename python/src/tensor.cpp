// loom.Tensor: the C++ loom::Tensor handle with NumPy's and PyTorch's habits:
// .shape (a tuple), .dtype and .device (their names: "float32", "lazy:cpu"),
// .numpy() / __array__ (a read-only view of the host bytes, no copy),
// __dlpack__ / __dlpack_device__ (the same bytes to any DLPack consumer),
// .item(), .tolist(), .to(device or dtype), a few arithmetic operators and
// autograd (.requires_grad_(), .backward(), .grad). Host reads of a lazy
// tensor sync it with the GIL released. tensor(), from_dlpack() and
// from_numpy() make tensors from arrays (python/loom/__init__.py wraps
// them: lists and scalars go through numpy.asarray there).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "bindings.h"
#include "loom/error.h"
#include "loom/ops.h"
#include "loom/tensor.h"
#include "tensor_storage.h"

namespace nb = nanobind;

namespace loom::python {
namespace {

nb::tuple shape_tuple(const Tensor& t) {
  nb::list out;
  for (int64_t d : t.shape()) out.append(d);
  return nb::tuple(out);
}

// A Python int, float or bool for a one-element tensor (torch's item()).
nb::object item(const Tensor& t) {
  LOOM_CHECK(t.numel() == 1, "[item] tensor with ", t.numel(),
             " elements cannot be converted to a scalar");
  double v;
  {
    nb::gil_scoped_release release;
    v = t.item();
  }
  if (t.dtype() == DType::boolean) return nb::bool_(v != 0);
  if (is_integral(t.dtype())) return nb::int_(static_cast<int64_t>(v));
  return nb::float_(v);
}

// NumPy has no bfloat16: a bf16 tensor reads as float32 (a copy).
nb::object to_numpy(const Tensor& t) {
  Tensor host = t.dtype() == DType::bf16 ? t.to(DType::f32) : t;
  nb::ndarray<nb::ro> view = host_view(host);
  return nb::cast(nb::ndarray<nb::numpy, nb::ro>(view));
}

// __dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None):
// a DLPack capsule ("dltensor") of a view of the host bytes, holding the
// buffer; the keywords change nothing (host memory, no stream, no copy).
nb::object dlpack(const Tensor& t, nb::kwargs) { return nb::cast(host_view(t)); }

Tensor to_device_or_dtype(const Tensor& t, const std::string& where) {
  nb::gil_scoped_release release;  // to(cpu) of a lazy tensor syncs it
  for (DType d : kAllDTypes)
    if (where == dtype_name(d)) return t.to(d);
  return t.to(Device(where));  // loom::Error "[device] unknown device 'x' (expected ...)"
}

Tensor array_tensor(const nb::ndarray<nb::ro>& array, const std::optional<std::string>& device) {
  Tensor shared = wrap_host_array(array, "tensor");
  // A copy: loom.tensor owns its memory (torch.tensor copies too).
  Tensor out = from_blob(shared.data(), shared.shape(), shared.dtype());
  return device ? out.to(Device(*device)) : out;
}

void bind_tensor_methods(nb::class_<Tensor>& c) {
  c.def_prop_ro("shape", &shape_tuple, "The sizes, a tuple of ints (torch.Size).")
      .def_prop_ro(
          "dtype", [](const Tensor& t) { return std::string(dtype_name(t.dtype())); },
          "The element type's name: float32, bfloat16, float16, int32, int64, bool.")
      .def_prop_ro(
          "device", [](const Tensor& t) { return t.device().str(); },
          "Where the tensor lives: cpu, cpu:reference, lazy:cpu, lazy:xla, ...")
      .def_prop_ro("ndim", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def("dim", &Tensor::dim)
      .def("__len__",
           [](const Tensor& t) {
             LOOM_CHECK(t.dim() > 0, "[len] len() of a 0-d tensor");
             return t.shape()[0];
           })
      .def("item", &item, "The one element as a Python float, int or bool (syncs a lazy tensor).")
      .def(
          "tolist", [](const Tensor& t) { return to_numpy(t).attr("tolist")(); },
          "The elements as nested Python lists.")
      .def("numpy", &to_numpy,
           "A read-only NumPy array sharing the tensor's host memory (bfloat16: a float32 copy).")
      .def(
          "__array__",
          [](const Tensor& t, nb::object dtype, nb::object copy) {
            nb::object a = to_numpy(t);
            if (!dtype.is_none())
              a = a.attr("astype")(dtype);
            else if (!copy.is_none() && nb::cast<bool>(copy))
              a = a.attr("copy")();
            return a;
          },
          nb::arg("dtype") = nb::none(), nb::arg("copy") = nb::none())
      .def("__dlpack__", &dlpack, "The DLPack capsule of the host bytes (no copy).")
      .def(
          "__dlpack_device__",
          [](const Tensor&) { return nb::make_tuple(int(nb::device::cpu::value), 0); },
          "(kDLCPU, 0): loom hands out host memory (a lazy tensor is synced).")
      .def("to", &to_device_or_dtype, nb::arg("device_or_dtype"),
           "A copy on a device ('cpu', 'lazy', 'lazy:xla', ...) or with a dtype ('float32', ...).")
      .def("cpu", [](const Tensor& t) { return to_device_or_dtype(t, "cpu"); })
      .def("__repr__", [](const Tensor& t) {
        nb::gil_scoped_release release;
        return t.to_string();
      });
}

void bind_tensor_autograd(nb::class_<Tensor>& c) {
  c.def("detach", &Tensor::detach)
      .def_prop_ro("requires_grad", &Tensor::requires_grad)
      .def("requires_grad_", &Tensor::requires_grad_, nb::arg("value") = true,
           nb::rv_policy::reference_internal)
      .def_prop_ro("grad",
                   [](const Tensor& t) -> std::optional<Tensor> {
                     Tensor g = t.grad();
                     return g.defined() ? std::optional<Tensor>(g) : std::nullopt;
                   })
      .def(
          "backward",
          [](const Tensor& t, std::optional<Tensor> gradient) {
            nb::gil_scoped_release release;  // eager on cpu: the backward kernels run here
            t.backward(gradient ? *gradient : Tensor());
          },
          nb::arg("gradient") = nb::none());
}

void bind_tensor_ops(nb::class_<Tensor>& c) {
  using BinT = Tensor (*)(const Tensor&, const Tensor&);
  using BinS = Tensor (*)(const Tensor&, double);
  c.def("__add__", static_cast<BinT>(&add))
      .def("__add__", static_cast<BinS>(&add))
      .def("__radd__", static_cast<BinS>(&add))
      .def("__sub__", static_cast<BinT>(&sub))
      .def("__sub__", static_cast<BinS>(&sub))
      .def("__mul__", static_cast<BinT>(&mul))
      .def("__mul__", static_cast<BinS>(&mul))
      .def("__rmul__", static_cast<BinS>(&mul))
      .def("__truediv__", static_cast<BinT>(&div))
      .def("__truediv__", static_cast<BinS>(&div))
      .def("__neg__", [](const Tensor& t) { return neg(t); })
      .def("__matmul__", [](const Tensor& a, const Tensor& b) { return matmul(a, b); })
      .def("exp", [](const Tensor& t) { return exp(t); })
      .def("relu", [](const Tensor& t) { return relu(t); })
      .def(
          "sum", [](const Tensor& t) { return sum(t); }, "The sum of every element, a 0-d tensor.")
      .def("mean", [](const Tensor& t) { return mean(t); })
      .def("reshape", [](const Tensor& t, const Shape& s) { return reshape(t, s); })
      .def("transpose", [](const Tensor& t, int64_t a, int64_t b) { return transpose(t, a, b); });
}

}  // namespace

void bind_tensor(nb::module_& m) {
  nb::class_<Tensor> c(m, "Tensor",
                       "A loom tensor: host data on cpu, or a pending value on a lazy device.");
  bind_tensor_methods(c);
  bind_tensor_autograd(c);
  bind_tensor_ops(c);
  m.def("tensor", &array_tensor, nb::arg("array"), nb::arg("device") = nb::none(),
        "A tensor holding a copy of a C-contiguous host array (float32, bfloat16, float16, "
        "int32, int64, bool), optionally moved to `device`.");
  m.def(
      "from_dlpack", [](const nb::ndarray<nb::ro>& a) { return wrap_host_array(a, "from_dlpack"); },
      nb::arg("array").noconvert(),
      "A cpu tensor sharing the memory of a DLPack-capable host array (NumPy, PyTorch, ...): no "
      "copy. The array must be C-contiguous.");
  m.def("manual_seed", &manual_seed, nb::arg("seed"), "Seeds loom's global generator.");
}

}  // namespace loom::python
