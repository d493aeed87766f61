// Declarations of the gradient rules, one per op kind (rules_*.cpp define
// them). A kNondiff op's rule is nullptr.
#pragma once

#include "autograd/engine.h"

namespace loom::autograd::rules {

/// Operand `i` of `node` as recorded (shared by the rules_*.cpp files).
inline const Tensor& in(const GradNode& node, size_t i) { return node.inputs[i]; }

std::vector<Tensor> grad_abs(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_add(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_all_gather(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_all_reduce(const GradNode& node, const Tensor& g);
inline constexpr GradRule grad_arange = nullptr;
inline constexpr GradRule grad_argmax = nullptr;
std::vector<Tensor> grad_attention(const GradNode& node, const Tensor& g);
inline constexpr GradRule grad_attention_backward = nullptr;
std::vector<Tensor> grad_cast(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_concat(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_cos(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_cross_entropy(const GradNode& node, const Tensor& g);
inline constexpr GradRule grad_cross_entropy_backward = nullptr;
std::vector<Tensor> grad_div(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_dropout(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_embedding(const GradNode& node, const Tensor& g);
inline constexpr GradRule grad_eq = nullptr;
std::vector<Tensor> grad_erf(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_exp(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_expand(const GradNode& node, const Tensor& g);
inline constexpr GradRule grad_full = nullptr;
inline constexpr GradRule grad_fused_linear_cross_entropy = nullptr;
std::vector<Tensor> grad_gather(const GradNode& node, const Tensor& g);
inline constexpr GradRule grad_ge = nullptr;
std::vector<Tensor> grad_gelu(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_gelu_tanh(const GradNode& node, const Tensor& g);
inline constexpr GradRule grad_gt = nullptr;
std::vector<Tensor> grad_index_add(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_index_select(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_layer_norm(const GradNode& node, const Tensor& g);
inline constexpr GradRule grad_le = nullptr;
std::vector<Tensor> grad_log(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_log_softmax(const GradNode& node, const Tensor& g);
inline constexpr GradRule grad_lt = nullptr;
std::vector<Tensor> grad_matmul(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_max(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_maximum(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_mean(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_min(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_minimum(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_mul(const GradNode& node, const Tensor& g);
inline constexpr GradRule grad_ne = nullptr;
std::vector<Tensor> grad_neg(const GradNode& node, const Tensor& g);
inline constexpr GradRule grad_normal = nullptr;
inline constexpr GradRule grad_one_hot = nullptr;
std::vector<Tensor> grad_permute(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_pow(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_pow_scalar(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_reduce_scatter(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_relu(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_reshape(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_rsqrt(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_scatter_add(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_sigmoid(const GradNode& node, const Tensor& g);
inline constexpr GradRule grad_sign = nullptr;
std::vector<Tensor> grad_sin(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_slice(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_softmax(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_sqrt(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_sub(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_sum(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_tanh(const GradNode& node, const Tensor& g);
inline constexpr GradRule grad_uniform = nullptr;
std::vector<Tensor> grad_var(const GradNode& node, const Tensor& g);
std::vector<Tensor> grad_where(const GradNode& node, const Tensor& g);

}  // namespace loom::autograd::rules
