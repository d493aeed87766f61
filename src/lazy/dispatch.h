// The one entry point every op goes through below autograd: check devices,
// infer the output type, then run the op at once (eager `cpu` device: a
// one-node graph lowered to the backend's kernel) or trace it (lazy device).
#pragma once

#include <vector>

#include "core/buffer.h"
#include "loom/tensor.h"
#include "ops/attrs.h"
#include "ops/op_kind.h"

namespace loom::lazy {

/// Applies `op` to `inputs` with `attrs`. Nullary ops (full, arange) run on
/// `device`; otherwise all operands must share one device (loom::Error
/// "[op] operands on devices cpu and lazy:cpu"). No autograd recording.
Tensor apply_op(ops::OpKind op, const std::vector<Tensor>& inputs, const ops::Attrs& attrs,
                const Device& device = {});

/// A tensor on `device` holding the bytes of `data` (a host buffer with
/// `type`'s bytes): wrapped as is where the device's memory is host
/// memory, else copied into the device's memory (Backend::copy_to_device).
/// Throws loom::Error "[backend] unknown backend 'x' ..." for a device
/// whose backend is not registered.
Tensor make_tensor(BufferPtr data, const ops::TensorType& type, const Device& device);

/// The tensor's materialized buffer (syncing a lazy tensor first); in the
/// device's memory, so host code reads it only through host_data().
const BufferPtr& materialize(const Tensor& t);

/// The tensor's bytes in host memory (row-major, type().nbytes() long):
/// syncs a lazy tensor, and copies from device memory that is not
/// host-visible (once per value; the copy lives with the tensor).
const void* host_data(const Tensor& t);

/// Moves `t` (every handle to it) onto `device` with `dtype`: its value is
/// copied there (through host memory), its version bumped. The one path by
/// which a tensor changes device in place (Module::to, load onto a device).
void move_in_place(const Tensor& t, const Device& device, DType dtype);

/// Rebinds `dst` to the value of `src` (same type) and bumps its version:
/// the in-place primitive.
void rebind(const Tensor& dst, const Tensor& src);

/// rebind() without registering `dst` as a live tensor: mark_step() does not
/// materialize `dst`'s pending value, which is computed anew inside every
/// graph that reads it (FSDP full_shard: a parameter gathered from its shard
/// in each step, never kept whole between steps). The recipe of that value
/// survives every mark_step that computes it inside its graph (its nodes
/// keep their operands; the buffers it reads are not donated), until `dst`
/// is rebound. A host read still syncs it (on every rank: the value may hold
/// a collective).
void rebind_unsynced(const Tensor& dst, const Tensor& src);

}  // namespace loom::lazy
