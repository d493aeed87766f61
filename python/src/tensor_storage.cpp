// Zero-copy host memory between loom and Python (see tensor_storage.h).
// DLPack's element types and its CPU device code are from the DLPack
// specification (dlpack.h: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4,
// kDLBool 6; kDLCPU 1), which nanobind's dlpack namespace spells out.
#include "tensor_storage.h"

#include <memory>

#include "core/allocator.h"
#include "core/buffer.h"
#include "lazy/dispatch.h"
#include "lazy/tensor_impl.h"
#include "loom/error.h"

namespace nb = nanobind;

namespace loom::python {
namespace {

using nb::dlpack::dtype_code;

// An Allocator for exactly one block: the outside array's memory. Freeing
// the block drops the reference to the array (with the GIL: the last
// reference may be freed by the executor's thread).
class ArrayAllocator final : public Allocator {
 public:
  explicit ArrayAllocator(const nb::ndarray<nb::ro>& array) : array_(array) {}
  ~ArrayAllocator() override { release(); }
  void* allocate(size_t) override { return const_cast<void*>(array_.data()); }
  void deallocate(void*, size_t) override { release(); }

 private:
  void release() {
    if (!array_.is_valid()) return;
    if (!Py_IsInitialized()) return;  // interpreter gone at exit: leak, do not crash
    nb::gil_scoped_acquire gil;
    array_ = nb::ndarray<nb::ro>();
  }
  nb::ndarray<nb::ro> array_;
};

// The Buffer and its one-block allocator, freed together (allocator last).
struct ArrayBuffer {
  explicit ArrayBuffer(const nb::ndarray<nb::ro>& array)
      : allocator(array), buffer(array.nbytes(), allocator) {}
  ArrayAllocator allocator;
  Buffer buffer;
};

bool is_row_major(const nb::ndarray<nb::ro>& a) {
  int64_t expected = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) != 1 && a.stride(i) != expected) return false;
    expected *= static_cast<int64_t>(a.shape(i));
  }
  return true;
}

}  // namespace

nb::dlpack::dtype to_dlpack(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return {uint8_t(dtype_code::Float), 32, 1};
    case DType::bf16:
      return {uint8_t(dtype_code::Bfloat), 16, 1};
    case DType::f16:
      return {uint8_t(dtype_code::Float), 16, 1};
    case DType::i32:
      return {uint8_t(dtype_code::Int), 32, 1};
    case DType::i64:
      return {uint8_t(dtype_code::Int), 64, 1};
    case DType::boolean:
      return {uint8_t(dtype_code::Bool), 8, 1};
  }
  throw Error("[dlpack] unknown dtype");
}

DType from_dlpack_dtype(nb::dlpack::dtype t, const char* op) {
  if (t.lanes == 1) {
    if (t.code == uint8_t(dtype_code::Float) && t.bits == 32) return DType::f32;
    if (t.code == uint8_t(dtype_code::Float) && t.bits == 16) return DType::f16;
    if (t.code == uint8_t(dtype_code::Bfloat) && t.bits == 16) return DType::bf16;
    if (t.code == uint8_t(dtype_code::Int) && t.bits == 32) return DType::i32;
    if (t.code == uint8_t(dtype_code::Int) && t.bits == 64) return DType::i64;
    if (t.code == uint8_t(dtype_code::Bool) && t.bits == 8) return DType::boolean;
  }
  static const char* kCodes[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  const char* code = t.code < 7 ? kCodes[t.code] : "code?";
  throw Error(std::string("[") + op + "] no loom dtype for " + code + std::to_string(t.bits) +
              (t.lanes != 1 ? "x" + std::to_string(t.lanes) : "") +
              " (loom has float32, bfloat16, float16, int32, int64, bool)");
}

nb::ndarray<nb::ro> host_view(const Tensor& t) {
  const void* p;
  {
    nb::gil_scoped_release release;
    p = lazy::host_data(t);
  }
  TensorImpl* impl = t.impl();
  // The buffer holding p: the tensor's own, or its host copy (device memory
  // that is not host-visible). Held by the capsule, not the tensor: an
  // in-place op rebinds the tensor to a new buffer, the view keeps the old.
  BufferPtr holder = (impl->data && impl->data->data() == p) ? impl->data : impl->host_copy;
  LOOM_CHECK(holder && holder->data() == p, "[numpy] no host buffer holds the tensor's bytes");
  nb::capsule owner(new BufferPtr(std::move(holder)),
                    [](void* q) noexcept { delete static_cast<BufferPtr*>(q); });
  std::vector<size_t> shape(t.shape().begin(), t.shape().end());
  return nb::ndarray<nb::ro>(p, shape.size(), shape.data(), owner, nullptr, to_dlpack(t.dtype()),
                             nb::device::cpu::value);
}

Tensor wrap_host_array(const nb::ndarray<nb::ro>& array, const char* op) {
  LOOM_CHECK(array.device_type() == nb::device::cpu::value, "[", op,
             "] the array is on DLPack device ", array.device_type(),
             "; loom takes host (CPU) memory only");
  DType dtype = from_dlpack_dtype(array.dtype(), op);
  LOOM_CHECK(is_row_major(array), "[", op,
             "] the array is not C-contiguous (row-major); loom tensors have no strides: "
             "copy it first (numpy.ascontiguousarray)");
  Shape shape;
  for (size_t i = 0; i < array.ndim(); ++i) shape.push_back(static_cast<int64_t>(array.shape(i)));
  auto owner = std::make_shared<ArrayBuffer>(array);
  BufferPtr buffer(owner, &owner->buffer);  // aliasing: frees the pair together
  return lazy::make_tensor(std::move(buffer), ops::TensorType{shape, dtype}, Device("cpu"));
}

}  // namespace loom::python
