// The all_reduce op function (loom/ops.h) and its gradient rule. With y_r =
// sum_k x_k on every rank r and a loss sum_r L_r(y_r), dL/dx_k = sum_r
// dL_r/dy_r: the gradient of an all_reduce is the all_reduce (same op; for
// mean both sides carry the 1/world_size) of the incoming gradients.
// Assumes every rank runs the same backward (so the backward's all_reduces
// pair up across ranks too).
#include "loom/collective.h"
#include "autograd/engine.h"
#include "autograd/rules.h"
#include "loom/error.h"

namespace loom {

Tensor all_reduce(const Tensor& x, dist::ReduceOp op) {
  LOOM_CHECK(op == dist::ReduceOp::sum || op == dist::ReduceOp::mean, "[all_reduce] reduce op ",
             dist::reduce_op_name(op), " is not supported (sum, mean)");
  ops::Attrs a;
  a.index = op == dist::ReduceOp::mean ? 1 : 0;
  return autograd::apply(ops::OpKind::k_all_reduce, {x}, a);
}

namespace autograd::rules {

std::vector<Tensor> grad_all_reduce(const GradNode& n, const Tensor& g) {
  return {autograd::apply(ops::OpKind::k_all_reduce, {g}, n.attrs)};
}

}  // namespace autograd::rules
}  // namespace loom
