// loom::Tensor's methods, the factories and the global Philox generator.
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <sstream>

#include "autograd/engine.h"
#include "lazy/dispatch.h"
#include "lazy/tensor_impl.h"
#include "lazy/trace.h"
#include "loom/error.h"
#include "loom/metrics.h"
#include "loom/ops.h"

namespace loom {

using ops::Attrs;
using ops::OpKind;

const Shape& Tensor::shape() const {
  LOOM_CHECK(defined(), "[tensor] access to an undefined tensor");
  return impl_->type.shape;
}
int64_t Tensor::size(int64_t axis) const { return shape()[normalize_axis(axis, dim(), "size")]; }
DType Tensor::dtype() const {
  LOOM_CHECK(defined(), "[tensor] access to an undefined tensor");
  return impl_->type.dtype;
}
const Device& Tensor::device() const {
  LOOM_CHECK(defined(), "[tensor] access to an undefined tensor");
  return impl_->device;
}

bool Tensor::requires_grad() const { return defined() && impl_->requires_grad; }
Tensor& Tensor::requires_grad_(bool value) {
  LOOM_CHECK(!value || is_floating(dtype()), "[requires_grad_] dtype ", dtype_name(dtype()),
             " cannot require grad (needs a floating dtype)");
  LOOM_CHECK(!impl_->grad_fn, "[requires_grad_] only leaf tensors can change requires_grad");
  impl_->requires_grad = value;
  return *this;
}
Tensor Tensor::grad() const { return defined() ? impl_->grad : Tensor(); }
void Tensor::set_grad(const Tensor& grad) { impl_->grad = grad; }
void Tensor::zero_grad() { impl_->grad = Tensor(); }

Tensor Tensor::detach() const {
  auto impl = std::make_shared<TensorImpl>();
  impl->type = impl_->type;
  impl->device = impl_->device;
  impl->backend = impl_->backend;
  impl->data = impl_->data;
  impl->node = impl_->node;
  Tensor out(std::move(impl));
  if (out.impl()->node && !out.impl()->data) lazy::register_live(out);
  return out;
}

void Tensor::backward(const Tensor& gradient) const {
  Tensor g = gradient;
  if (!g.defined()) {
    LOOM_CHECK(numel() == 1,
               "[backward] gradient can be implicit only for a tensor with one element, got "
               "shape ",
               loom::to_string(shape()));
    g = ones(shape(), dtype(), device());
  }
  LOOM_CHECK(g.shape() == shape(), "[backward] gradient shape ", loom::to_string(g.shape()),
             " does not match ", loom::to_string(shape()));
  autograd::backward(*this, g);
}

namespace {
int64_t ns_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
      .count();
}
}  // namespace

// Every read of a lazy tensor's values on the host is a transfer from the
// device (PyTorch/XLA's TransferFromDeviceTime): to(cpu) and data() record
// one sample each; item() and to_vector() go through data().
Tensor Tensor::to(const Device& device) const {
  if (this->device() == device) return *this;
  auto t0 = std::chrono::steady_clock::now();
  Tensor out = from_blob(lazy::host_data(*this), shape(), dtype(), device);
  if (requires_grad()) out.impl()->requires_grad = true;  // a new leaf
  const int64_t ns = ns_since(t0);
  if (device.is_lazy()) metrics::add_time("TransferToDeviceTime", ns);
  if (this->device().is_lazy()) metrics::add_time("TransferFromDeviceTime", ns);
  return out;
}

Tensor Tensor::to(DType dtype) const { return cast(*this, dtype); }

const void* Tensor::data() const {
  if (!defined() || !device().is_lazy()) return lazy::host_data(*this);
  auto t0 = std::chrono::steady_clock::now();
  const void* p = lazy::host_data(*this);
  metrics::add_time("TransferFromDeviceTime", ns_since(t0));
  return p;
}

double Tensor::item() const {
  LOOM_CHECK(numel() == 1, "[item] tensor with ", numel(),
             " elements cannot be converted to a scalar");
  return load_as_double(data(), dtype(), 0);
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  const void* p = data();
  std::vector<T> out(numel());
  if (dtype() == DType::i64 && std::is_same_v<T, int64_t>) {
    std::memcpy(out.data(), p, out.size() * sizeof(T));
    return out;
  }
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<T>(load_as_double(p, dtype(), i));
  return out;
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int32_t> Tensor::to_vector<int32_t>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<uint8_t> Tensor::to_vector<uint8_t>() const;

std::string Tensor::to_string() const {
  if (!defined()) return "tensor(undefined)";
  std::ostringstream out;
  std::vector<double> v = to_vector<double>();
  out << "tensor([";
  for (size_t i = 0; i < v.size() && i < 16; ++i) out << (i ? ", " : "") << v[i];
  if (v.size() > 16) out << ", ...";
  out << "], shape=" << loom::to_string(shape()) << ", dtype=" << dtype_name(dtype())
      << ", device=" << device().str() << ")";
  return out.str();
}

namespace {
void check_inplace(const Tensor& t, const char* op) {
  LOOM_CHECK(!(is_grad_enabled() && t.requires_grad()), "[", op,
             "] in-place update of a tensor that requires grad; wrap it in loom::NoGradGuard");
}
}  // namespace

Tensor& Tensor::add_(const Tensor& other, double alpha) {
  check_inplace(*this, "add_");
  Tensor o = alpha == 1.0 ? other : mul(other, alpha);
  lazy::rebind(*this, cast(add(*this, o), dtype()));
  return *this;
}
Tensor& Tensor::mul_(double factor) {
  check_inplace(*this, "mul_");
  lazy::rebind(*this, cast(mul(*this, factor), dtype()));
  return *this;
}
Tensor& Tensor::copy_(const Tensor& src) {
  check_inplace(*this, "copy_");
  Tensor s = cast(src.to(device()), dtype());
  if (s.shape() != shape()) s = expand(s, shape());
  lazy::rebind(*this, s);
  return *this;
}
Tensor& Tensor::zero_() { return fill_(0.0); }
Tensor& Tensor::fill_(double value) {
  check_inplace(*this, "fill_");
  lazy::rebind(*this, full(shape(), value, dtype(), device()));
  return *this;
}

// ---- Factories ----

Tensor from_blob(const void* data, const Shape& shape, DType dtype, const Device& device) {
  for (int64_t d : shape) LOOM_CHECK(d >= 0, "[tensor] negative dim in shape ", to_string(shape));
  ops::TensorType type{shape, dtype};
  BufferPtr buf = make_buffer(type.nbytes());
  if (type.nbytes()) std::memcpy(buf->data(), data, type.nbytes());
  Device host = device;
  return lazy::make_tensor(std::move(buf), type, host);
}

Tensor tensor(const std::vector<float>& values, const Shape& shape, const Device& device) {
  LOOM_CHECK(static_cast<int64_t>(values.size()) == numel(shape), "[tensor] ", values.size(),
             " values do not fill shape ", to_string(shape));
  return from_blob(values.data(), shape, DType::f32, device);
}

Tensor tensor_i64(const std::vector<int64_t>& values, const Shape& shape, const Device& device) {
  LOOM_CHECK(static_cast<int64_t>(values.size()) == numel(shape), "[tensor] ", values.size(),
             " values do not fill shape ", to_string(shape));
  return from_blob(values.data(), shape, DType::i64, device);
}

Tensor scalar_tensor(double value, DType dtype, const Device& device) {
  ops::TensorType type{{}, dtype};
  BufferPtr buf = make_buffer(type.nbytes());
  store_from_double(buf->data(), dtype, 0, value);
  return lazy::make_tensor(std::move(buf), type, device);
}

Tensor full(const Shape& shape, double value, DType dtype, const Device& device) {
  for (int64_t d : shape) LOOM_CHECK(d >= 0, "[full] negative dim in shape ", to_string(shape));
  Attrs a;
  a.shape = shape;
  a.fill_value = value;
  a.dtype = dtype;
  return autograd::apply(OpKind::k_full, {}, a, device);
}
Tensor zeros(const Shape& shape, DType dtype, const Device& device) {
  return full(shape, 0.0, dtype, device);
}
Tensor ones(const Shape& shape, DType dtype, const Device& device) {
  return full(shape, 1.0, dtype, device);
}
Tensor zeros_like(const Tensor& x) { return zeros(x.shape(), x.dtype(), x.device()); }
Tensor ones_like(const Tensor& x) { return ones(x.shape(), x.dtype(), x.device()); }

Tensor arange(double start, double end, double step, DType dtype, const Device& device) {
  LOOM_CHECK(step != 0, "[arange] step must be non-zero");
  double n = std::ceil((end - start) / step);
  Attrs a;
  a.shape = {n > 0 ? static_cast<int64_t>(n) : 0};
  a.range_start = start;
  a.range_step = step;
  a.dtype = dtype;
  return autograd::apply(OpKind::k_arange, {}, a, device);
}
Tensor arange(int64_t end, DType dtype, const Device& device) {
  return arange(0.0, static_cast<double>(end), 1.0, dtype, device);
}

// ---- Generator ----

namespace {
std::mutex g_gen_mutex;
GeneratorState g_gen{0, 0};
}  // namespace

Tensor autograd::next_generator(const Device& device) {
  std::lock_guard<std::mutex> lock(g_gen_mutex);
  int64_t state[2] = {static_cast<int64_t>(g_gen.seed), static_cast<int64_t>(g_gen.offset)};
  ++g_gen.offset;
  return from_blob(state, {2}, DType::i64, device);
}

namespace {
using autograd::next_generator;

Tensor random_op(OpKind op, const Shape& shape, DType dtype, const Device& device) {
  Attrs a;
  a.shape = shape;
  a.dtype = dtype;
  return autograd::apply(op, {next_generator(device)}, a);
}
}  // namespace

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(g_gen_mutex);
  g_gen = {seed, 0};
}
GeneratorState generator_state() {
  std::lock_guard<std::mutex> lock(g_gen_mutex);
  return g_gen;
}
void set_generator_state(GeneratorState state) {
  std::lock_guard<std::mutex> lock(g_gen_mutex);
  g_gen = state;
}

Tensor rand(const Shape& shape, DType dtype, const Device& device) {
  return random_op(OpKind::k_uniform, shape, dtype, device);
}
Tensor randn(const Shape& shape, DType dtype, const Device& device) {
  return random_op(OpKind::k_normal, shape, dtype, device);
}

Tensor dropout(const Tensor& x, double p, bool training) {
  LOOM_CHECK(p >= 0 && p < 1, "[dropout] p must be in [0, 1), got ", p);
  if (!training || p == 0) return x;
  Attrs a;
  a.dropout_p = p;
  return autograd::apply(OpKind::k_dropout, {x, next_generator(x.device())}, a);
}

}  // namespace loom
