// loom::Tensor — a cheap handle to shared tensor state: shape, dtype, device,
// requires_grad, grad, and either device data or (on the lazy device) a
// pending IR value. Value semantics: reshape/transpose/slice return new
// tensors, never aliasing views; in-place ops (add_, copy_, zero_, ...) rebind
// the tensor's value so a parameter keeps its identity (PyTorch/XLA's model).
//
//   loom::Tensor x = loom::tensor({1, 2, 3, 4}, {2, 2}).requires_grad_();
//   loom::Tensor y = loom::sum(loom::exp(x));   // [] f32
//   y.backward();                               // x.grad() = exp(x)
//
// Every op is a free function in loom/ops.h.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "loom/device.h"
#include "loom/dtype.h"
#include "loom/shape.h"

namespace loom {

struct TensorImpl;  // lazy/tensor_impl.h

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  /// False for a default-constructed (undefined) tensor.
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  int64_t dim() const { return static_cast<int64_t>(shape().size()); }
  /// Size of `axis` (negative counts from the end); throws loom::Error.
  int64_t size(int64_t axis) const;
  int64_t numel() const { return loom::numel(shape()); }
  DType dtype() const;
  const Device& device() const;

  // Autograd.
  bool requires_grad() const;
  /// Marks a leaf tensor as needing a gradient; throws loom::Error for a
  /// non-floating dtype. Returns *this.
  Tensor& requires_grad_(bool value = true);
  /// The accumulated gradient (undefined until backward reaches this leaf).
  Tensor grad() const;
  void set_grad(const Tensor& grad);
  /// Resets .grad to undefined (set_to_none, as PyTorch's default).
  void zero_grad();
  /// Same value, cut from the autograd graph.
  Tensor detach() const;
  /// Back-propagates from this tensor. Without `gradient` the tensor must
  /// have one element (a loss); with it, `gradient` has this shape.
  /// Throws loom::Error when nothing requires grad or shapes differ.
  void backward(const Tensor& gradient = Tensor()) const;

  // Conversion and data access (these sync a lazy tensor).
  Tensor to(const Device& device) const;
  Tensor to(DType dtype) const;
  /// The single element as double; throws loom::Error when numel() != 1.
  double item() const;
  /// All elements converted to T (float, double, int32_t, int64_t, uint8_t).
  template <typename T>
  std::vector<T> to_vector() const;
  /// Host pointer to the contiguous, row-major elements (syncs first).
  const void* data() const;
  /// "tensor([[1, 2], [3, 4]], dtype=float32)"-style text (first values).
  std::string to_string() const;

  // In-place ops: rebind this tensor's value; not allowed on a leaf that
  // requires grad while grad mode is on (throws loom::Error).
  Tensor& add_(const Tensor& other, double alpha = 1.0);
  Tensor& mul_(double factor);
  Tensor& copy_(const Tensor& src);
  Tensor& zero_();
  Tensor& fill_(double value);

  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  /// True when both handles share one tensor state.
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

// ---- Factories. `device` defaults to cpu. ----

/// Copies `values` into a new f32 tensor of `shape` (numel must match).
Tensor tensor(const std::vector<float>& values, const Shape& shape, const Device& device = {});
/// Copies `values` into a new i64 tensor (token ids, labels).
Tensor tensor_i64(const std::vector<int64_t>& values, const Shape& shape, const Device& device = {});
/// Copies raw row-major bytes of `dtype` into a new tensor.
Tensor from_blob(const void* data, const Shape& shape, DType dtype, const Device& device = {});
/// A rank-0 tensor holding `value`.
Tensor scalar_tensor(double value, DType dtype = DType::f32, const Device& device = {});
Tensor full(const Shape& shape, double value, DType dtype = DType::f32, const Device& device = {});
Tensor zeros(const Shape& shape, DType dtype = DType::f32, const Device& device = {});
Tensor ones(const Shape& shape, DType dtype = DType::f32, const Device& device = {});
Tensor zeros_like(const Tensor& x);
Tensor ones_like(const Tensor& x);
/// [start, start+step, ...) below `end`, as torch.arange; dtype i64 by default.
Tensor arange(double start, double end, double step = 1.0, DType dtype = DType::i64,
              const Device& device = {});
Tensor arange(int64_t end, DType dtype = DType::i64, const Device& device = {});

// ---- Random numbers: Philox4x32-10 streams from the global generator. ----

/// Seeds the global generator and resets its offset (torch.manual_seed).
void manual_seed(uint64_t seed);
/// The global generator's (seed, offset); each random op takes the current
/// pair and advances the offset by one.
struct GeneratorState {
  uint64_t seed = 0;
  uint64_t offset = 0;
};
GeneratorState generator_state();
void set_generator_state(GeneratorState state);
/// Uniform [0, 1) and standard normal samples.
Tensor rand(const Shape& shape, DType dtype = DType::f32, const Device& device = {});
Tensor randn(const Shape& shape, DType dtype = DType::f32, const Device& device = {});

// ---- Grad mode. ----

/// RAII: disables gradient recording in its scope (torch.no_grad()).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};
bool is_grad_enabled();
void set_grad_enabled(bool enabled);

}  // namespace loom
