// Reverse-mode autograd over recorded op nodes. Every differentiable op run
// while grad mode is on and an operand requires grad records a GradNode
// (op kind, attributes, operands, detached output). backward() walks the
// nodes in reverse topological order and applies each op's gradient rule,
// written with loom ops (so it runs on the eager and the lazy device alike).
#pragma once

#include <string_view>
#include <vector>

#include "loom/error.h"
#include "loom/tensor.h"
#include "ops/attrs.h"
#include "ops/op_kind.h"

namespace loom::autograd {

struct GradNode {
  ops::OpKind op;
  ops::Attrs attrs;
  std::vector<Tensor> inputs;      // operands as passed (keep their grad_fn)
  std::vector<uint64_t> versions;  // operand versions at record time
  Tensor output;                   // the result, detached
  bool released = false;           // backward() ran through it and freed inputs/output
};

/// A gradient rule: given the node and dL/d(output) (output's shape), returns
/// dL/d(input) for each operand (undefined where no gradient flows). Rules
/// run with grad mode off.
using GradRule = std::vector<Tensor> (*)(const GradNode& node, const Tensor& grad_output);

/// The rule for `op`, or nullptr for ops marked kNondiff in ops.def.
GradRule grad_rule(ops::OpKind op);

/// Runs `op` (lazy::apply_op) and records a GradNode when needed.
Tensor apply(ops::OpKind op, const std::vector<Tensor>& inputs, const ops::Attrs& attrs,
             const Device& device = {});

/// Back-propagates `gradient` (same shape as root) from `root`, accumulating
/// into the .grad of every leaf that requires grad. Frees the graph as it
/// goes (PyTorch's retain_graph=False): each node drops its saved operands
/// and output once its gradient rule ran, so saved activations do not outlive
/// backward (on the lazy device they would otherwise become step outputs).
/// Throws loom::Error "[backward] ... a second time" when a node was freed by
/// an earlier backward().
void backward(const Tensor& root, const Tensor& gradient);

/// x's rank, after checking x is defined, so misuse of an op function names
/// the op rather than failing inside Tensor. Throws loom::Error
/// "[op] operand is an undefined tensor" when `x` is undefined.
inline int64_t rank_of(const Tensor& x, std::string_view op) {
  LOOM_CHECK(x.defined(), "[", op, "] operand is an undefined tensor");
  return x.dim();
}

/// The global Philox generator's current (seed, offset) as an i64[2] tensor
/// on `device`, advancing the offset by one: what every random op (dropout,
/// rand, attention with dropout) draws with (defined in tensor.cpp).
Tensor next_generator(const Device& device);

/// Sums `grad` down to `shape` (the reverse of broadcasting).
Tensor sum_to(const Tensor& grad, const Shape& shape);

}  // namespace loom::autograd
