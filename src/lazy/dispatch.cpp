// Eager execution of single ops and the in-place rebind primitive. The lazy
// device (tracing into an IR graph) plugs in here.
#include "lazy/dispatch.h"

#include "backends/backend.h"
#include "lazy/tensor_impl.h"
#include "lazy/trace.h"
#include "loom/error.h"
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

}  // namespace

Tensor make_tensor(BufferPtr data, const ops::TensorType& type, const Device& device) {
  auto impl = std::make_shared<TensorImpl>();
  impl->type = type;
  impl->device = device;
  if (device.is_lazy()) impl->node = data_node(data, type);
  impl->data = std::move(data);
  return Tensor(std::move(impl));
}

const BufferPtr& materialize(const Tensor& t) {
  LOOM_CHECK(t.defined(), "[tensor] access to an undefined tensor");
  if (t.device().is_lazy()) ensure_materialized(t);
  LOOM_CHECK(t.impl()->data != nullptr, "[tensor] tensor on ", t.device().str(),
             " has no data");
  return t.impl()->data;
}

Tensor apply_op(ops::OpKind op, const std::vector<Tensor>& inputs, const ops::Attrs& attrs,
                const Device& device) {
  const Device& dev = common_device(op, inputs, device);
  std::vector<ops::TensorType> types;
  types.reserve(inputs.size());
  for (const Tensor& t : inputs) types.push_back(t.impl()->type);
  ops::TensorType out_type = ops::infer_type(op, types, attrs);
  if (dev.is_lazy()) return trace_op(op, inputs, attrs, out_type, dev);
  const backends::Backend& backend = backends::backend_by_name(dev.backend);
  backends::OpCall call{op, &attrs, {}, {}};
  call.inputs.reserve(inputs.size());
  for (const Tensor& t : inputs) call.inputs.push_back({materialize(t)->data(), t.impl()->type});
  BufferPtr out = make_buffer(out_type.nbytes());
  call.output = {out->data(), out_type};
  backend.run(call);
  return make_tensor(std::move(out), out_type, dev);
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

}  // namespace loom::lazy
