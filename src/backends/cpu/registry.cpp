// Which ops have optimized cpu kernels: every op of ops.def. A kernel may
// still hand a rare dtype case (bool arithmetic, integer pow_scalar, bool
// index_add/scatter_add, zero-width attention) to the reference kernel.
#include "backends/cpu/kernels.h"

namespace loom::backends::cpu {

Kernel optimized_kernel(ops::OpKind op) {
  using ops::OpKind;
  switch (op) {
    case OpKind::k_arange:
      return cpu_arange;
    case OpKind::k_full:
      return cpu_full;
    case OpKind::k_where:
      return cpu_where;
    case OpKind::k_sum:
    case OpKind::k_mean:
    case OpKind::k_max:
    case OpKind::k_min:
    case OpKind::k_argmax:
    case OpKind::k_var:
      return cpu_reduce;
    case OpKind::k_matmul:
      return cpu_matmul;
    case OpKind::k_softmax:
      return cpu_softmax;
    case OpKind::k_log_softmax:
      return cpu_log_softmax;
    case OpKind::k_layer_norm:
      return cpu_layer_norm;
    case OpKind::k_cross_entropy:
      return cpu_cross_entropy;
    case OpKind::k_cross_entropy_backward:
      return cpu_cross_entropy_backward;
    case OpKind::k_fused_linear_cross_entropy:
      return cpu_fused_linear_cross_entropy;
    case OpKind::k_attention:
      return cpu_attention;
    case OpKind::k_attention_backward:
      return cpu_attention_backward;
    case OpKind::k_embedding:
      return cpu_embedding;
    case OpKind::k_index_select:
      return cpu_index_select;
    case OpKind::k_index_add:
      return cpu_index_add;
    case OpKind::k_gather:
      return cpu_gather;
    case OpKind::k_scatter_add:
      return cpu_scatter_add;
    case OpKind::k_one_hot:
      return cpu_one_hot;
    case OpKind::k_reshape:
      return cpu_reshape;
    case OpKind::k_permute:
      return cpu_permute;
    case OpKind::k_expand:
      return cpu_expand;
    case OpKind::k_slice:
      return cpu_slice;
    case OpKind::k_concat:
      return cpu_concat;
    case OpKind::k_dropout:
      return cpu_dropout;
    case OpKind::k_all_reduce:
      return cpu_all_reduce;
    case OpKind::k_all_gather:
      return cpu_all_gather;
    case OpKind::k_reduce_scatter:
      return cpu_reduce_scatter;
    case OpKind::k_uniform:
      return cpu_uniform;
    case OpKind::k_normal:
      return cpu_normal;
    default:
      break;
  }
  if (ops::has_trait(op, ops::kUnary)) return cpu_unary;
  if (ops::has_trait(op, ops::kBinary)) return cpu_binary;
  return nullptr;
}

}  // namespace loom::backends::cpu
