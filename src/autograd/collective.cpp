// The all_reduce op function (loom/ops.h) and its gradient rule. With y_r =
// sum_k x_k on every rank r and a loss sum_r L_r(y_r), dL/dx_k = sum_r
// dL_r/dy_r: the gradient of an all_reduce is the all_reduce (same op; for
// mean both sides carry the 1/world_size) of the incoming gradients.
// all_gather and reduce_scatter are each other's gradient: with y = the
// ranks' x_k stacked (all_gather) and a loss sum_r L_r(y_r), dL/dx_k =
// sum_r (dL_r/dy_r)[block k], the reduce_scatter(sum) of the incoming
// gradients; with y_k = block k of sum_r x_r (reduce_scatter sum), dL/dx_r =
// the stacked dL_k/dy_k, the all_gather (divided by W for mean).
// Assumes every rank runs the same backward (so the backward's collectives
// pair up across ranks too).
#include "loom/collective.h"
#include "autograd/engine.h"
#include "autograd/rules.h"
#include "loom/error.h"
#include "loom/ops.h"

namespace loom {

Tensor all_reduce(const Tensor& x, dist::ReduceOp op) {
  LOOM_CHECK(op == dist::ReduceOp::sum || op == dist::ReduceOp::mean, "[all_reduce] reduce op ",
             dist::reduce_op_name(op), " is not supported (sum, mean)");
  ops::Attrs a;
  a.reduce_op = op == dist::ReduceOp::mean ? 1 : 0;
  return autograd::apply(ops::OpKind::k_all_reduce, {x}, a);
}

Tensor all_gather(const Tensor& x) {
  ops::Attrs a;
  a.world_size = dist::world_size();
  return autograd::apply(ops::OpKind::k_all_gather, {x}, a);
}

Tensor reduce_scatter(const Tensor& x, dist::ReduceOp op) {
  LOOM_CHECK(op == dist::ReduceOp::sum || op == dist::ReduceOp::mean, "[reduce_scatter] reduce op ",
             dist::reduce_op_name(op), " is not supported (sum, mean)");
  ops::Attrs a;
  a.reduce_op = op == dist::ReduceOp::mean ? 1 : 0;
  a.world_size = dist::world_size();
  return autograd::apply(ops::OpKind::k_reduce_scatter, {x}, a);
}

namespace autograd::rules {

std::vector<Tensor> grad_all_reduce(const GradNode& n, const Tensor& g) {
  return {autograd::apply(ops::OpKind::k_all_reduce, {g}, n.attrs)};
}

std::vector<Tensor> grad_all_gather(const GradNode& n, const Tensor& g) {
  ops::Attrs a;
  a.world_size = n.attrs.world_size;  // the world size it was traced with
  return {autograd::apply(ops::OpKind::k_reduce_scatter, {g}, a)};
}

std::vector<Tensor> grad_reduce_scatter(const GradNode& n, const Tensor& g) {
  ops::Attrs a;
  a.world_size = n.attrs.world_size;
  Tensor full = autograd::apply(ops::OpKind::k_all_gather, {g}, a);
  return {n.attrs.reduce_op == 1 ? div(full, static_cast<double>(n.attrs.world_size)) : full};
}

}  // namespace autograd::rules
}  // namespace loom
