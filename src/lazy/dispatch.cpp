// The one entry point of every op (eager: a cached one-node program, lazy:
// traced), the in-place rebind primitive, and the one path between host
// memory and a device's memory (make_tensor, host_data, move_in_place);
// device_traits (loom/device_traits.h), where devices meet the registry.
#include "lazy/dispatch.h"

#include <cstring>

#include "backends/backend.h"
#include "lazy/eager.h"
#include "lazy/tensor_impl.h"
#include "lazy/trace.h"
#include "loom/device_traits.h"
#include "loom/error.h"
#include "loom/lazy.h"
#include "ops/infer.h"

namespace loom::lazy {
namespace {

const Device& common_device(ops::OpKind op, const std::vector<Tensor>& inputs,
                            const Device& fallback) {
  if (inputs.empty()) return fallback;
  for (const Tensor& t : inputs) {
    LOOM_CHECK(t.defined(), "[", ops::op_name(op), "] operand is an undefined tensor");
    LOOM_CHECK(t.device() == inputs[0].device(), "[", ops::op_name(op), "] operands on devices ",
               inputs[0].device().str(), " and ", t.device().str());
  }
  return inputs[0].device();
}

// The backend of a tensor: resolved when it was made; by name for a tensor
// made elsewhere (traced, detached before it was made here).
const backends::Backend& backend_of(const TensorImpl& impl) {
  return impl.backend ? *impl.backend : backends::backend_by_name(impl.device.backend);
}

Tensor make_tensor_on(BufferPtr data, const ops::TensorType& type, const Device& device,
                      const backends::Backend& backend) {
  if (!backend.host_visible() && data->host_visible())
    data = backend.upload(data->data(), type, device.index);
  auto impl = std::make_shared<TensorImpl>();
  impl->type = type;
  impl->device = device;
  impl->backend = &backend;
  if (device.is_lazy()) impl->node = data_node(data, type);
  impl->data = std::move(data);
  return Tensor(std::move(impl));
}

}  // namespace

void check_device(const Device& device) {
  const backends::Backend& b = backends::backend_by_name(device.backend);
  std::string why_not = b.unavailable_reason();
  LOOM_CHECK(why_not.empty(), "[device] ", device.str(), ": ", why_not);
  LOOM_CHECK(device.index >= 0 && device.index < b.device_count(), "[device] ", device.str(),
             ": backend ", b.name(), " has ", b.device_count(), " device(s)");
}

DeviceTraits device_traits(const Device& device) {
  check_device(device);
  const backends::Backend& b = backends::backend_by_name(device.backend);
  const backends::Capabilities caps = b.capabilities();
  DeviceTraits t;
  t.lazy = device.is_lazy();
  t.host_memory = b.host_visible();
  t.plans_memory = caps.plans_itself;
  t.native_bf16 = caps.native_bf16;
  t.device_count = b.device_count();
  return t;
}

Tensor make_tensor(BufferPtr data, const ops::TensorType& type, const Device& device) {
  return make_tensor_on(std::move(data), type, device, backends::backend_by_name(device.backend));
}

const BufferPtr& materialize(const Tensor& t) {
  LOOM_CHECK(t.defined(), "[tensor] access to an undefined tensor");
  if (t.device().is_lazy()) ensure_materialized(t);
  LOOM_CHECK(t.impl()->data != nullptr, "[tensor] tensor on ", t.device().str(), " has no data");
  return t.impl()->data;
}

const void* host_data(const Tensor& t) {
  const BufferPtr& data = materialize(t);
  if (data->host_visible()) return data->data();
  TensorImpl& impl = *t.impl();
  if (impl.host_copy_of.lock() != data) {
    size_t n = impl.type.nbytes();
    impl.host_copy = make_buffer(n);
    backend_of(impl).copy_to_host(*data, impl.host_copy->data(), n);
    impl.host_copy_of = data;
  }
  return impl.host_copy->data();
}

void move_in_place(const Tensor& t, const Device& device, DType dtype) {
  check_device(device);
  ops::TensorType type{t.shape(), t.dtype()};
  BufferPtr host = make_buffer(type.nbytes());
  if (type.nbytes()) std::memcpy(host->data(), host_data(t), type.nbytes());
  Tensor moved = make_tensor(std::move(host), type, Device("cpu"));
  if (dtype != t.dtype()) {  // the eager cast kernel: the numbers a cast op gives
    ops::Attrs a;
    a.dtype = dtype;
    moved = apply_op(ops::OpKind::k_cast, {moved}, a);
    type.dtype = dtype;
  }
  if (device != moved.device()) {
    BufferPtr copy = make_buffer(type.nbytes());
    if (type.nbytes()) std::memcpy(copy->data(), host_data(moved), type.nbytes());
    moved = make_tensor(std::move(copy), type, device);
  }
  TensorImpl* d = t.impl();
  d->type = type;
  d->device = device;
  d->backend = moved.impl()->backend;
  d->data = moved.impl()->data;
  d->node = moved.impl()->node;
  d->host_copy = nullptr;
  d->host_copy_of.reset();
  ++d->version;
}

Tensor apply_op(ops::OpKind op, const std::vector<Tensor>& inputs, const ops::Attrs& attrs,
                const Device& device) {
  const Device& dev = common_device(op, inputs, device);
  std::vector<ops::TensorType> types;
  types.reserve(inputs.size());
  for (const Tensor& t : inputs) types.push_back(t.impl()->type);
  ops::TensorType out_type = ops::infer_type(op, types, attrs);
  if (dev.is_lazy()) return trace_op(op, inputs, attrs, out_type, dev);
  // Eager: a one-node program the backend compiled once for this signature.
  std::vector<BufferPtr> buffers;
  buffers.reserve(inputs.size());
  for (const Tensor& t : inputs) buffers.push_back(materialize(t));
  // The operands' backend, resolved when they were made (a factory op has none).
  const backends::Backend& backend =
      inputs.empty() ? backends::backend_by_name(dev.backend) : backend_of(*inputs[0].impl());
  BufferPtr out = run_eager(backend, op, std::move(buffers), types, attrs, out_type);
  return make_tensor_on(std::move(out), out_type, dev, backend);
}

void rebind(const Tensor& dst, const Tensor& src) {
  LOOM_CHECK(dst.impl()->type == src.impl()->type, "[copy_] cannot assign ",
             ops::to_string(src.impl()->type), " to ", ops::to_string(dst.impl()->type));
  LOOM_CHECK(dst.device() == src.device(), "[copy_] devices ", dst.device().str(), " and ",
             src.device().str(), " differ");
  dst.impl()->data = src.impl()->data;
  dst.impl()->node = src.impl()->node;
  ++dst.impl()->version;
  if (dst.device().is_lazy() && !dst.impl()->data) register_live(dst);
}

void rebind_unsynced(const Tensor& dst, const Tensor& src) {
  LOOM_CHECK(dst.impl()->type == src.impl()->type, "[copy_] cannot assign ",
             ops::to_string(src.impl()->type), " to ", ops::to_string(dst.impl()->type));
  dst.impl()->data = src.impl()->data;
  dst.impl()->node = src.impl()->node;
  ++dst.impl()->version;
  if (dst.device().is_lazy() && !dst.impl()->data) register_unsynced(dst);
}

}  // namespace loom::lazy
