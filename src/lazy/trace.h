// Trace-time IR: every op on a lazy tensor appends a TraceNode (op, attrs,
// operand nodes, type). A node holding `data` is device data — a graph input.
// After a sync each executed node becomes device data in place, so every
// tensor sharing it (and every later graph using it) sees the result.
#pragma once

#include <future>
#include <memory>
#include <vector>

#include "core/buffer.h"
#include "loom/tensor.h"
#include "ops/attrs.h"
#include "ops/op_kind.h"

namespace loom::lazy {

// States: pending (no data, `ready` invalid) -> in flight (`ready` valid; the
// executor thread sets `data` before it fulfils `ready`) -> done. Device
// data made on the host has `data` set and `ready` invalid. The tracing
// thread reads `data` of an in-flight node only after waiting on `ready`.
struct TraceNode {
  ops::OpKind op = ops::OpKind::k_full;
  ops::Attrs attrs;
  std::vector<std::shared_ptr<TraceNode>> operands;
  ops::TensorType type;
  int remat = 0;                   // ir::Instr::remat: the RematScope mark when traced
  BufferPtr data;                  // device data (a graph input); operands empty
  std::shared_future<void> ready;  // valid once launched for execution
  // `ready` first: it is written on the tracing thread only, while the
  // executor thread may be writing `data` of an in-flight node right now.
  bool is_pending() const { return !ready.valid() && !data; }
};
using TraceNodePtr = std::shared_ptr<TraceNode>;

/// Records `op` on lazy operands; returns the pending result tensor.
Tensor trace_op(ops::OpKind op, const std::vector<Tensor>& inputs, const ops::Attrs& attrs,
                const ops::TensorType& type, const Device& device);

/// The remat mark (ir::Instr::remat) of ops traced now on this thread: the
/// open RematScope's call number, -1 inside a RematBackwardScope that marks,
/// else 0 (lazy/remat_scope.cpp).
int current_remat_mark();

/// A device-data node for a buffer.
TraceNodePtr data_node(BufferPtr data, const ops::TensorType& type);

/// Adds a lazy tensor with a pending value to the live-tensor registry that
/// mark_step() collects.
void register_live(const Tensor& t);

/// Records that `t` holds a pending value mark_step() must not keep but must
/// keep computable (lazy::rebind_unsynced): a full sync then leaves the
/// operands of the nodes of that value's recipe in place, where it drops
/// those of every other node inside the graph.
void register_unsynced(const Tensor& t);

/// Syncs `t` if pending (counting an EarlySync) so that its data is set.
void ensure_materialized(const Tensor& t);

}  // namespace loom::lazy
