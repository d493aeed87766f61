// Misuse of the op functions (issue 2, "Done when"): each kind of mistake —
// mismatched shapes, a bad axis, an unsupported dtype, a bad index value, a
// wrong operand count or an undefined tensor, operands on different devices,
// a bad scalar argument — throws loom::Error whose message names the op and
// the offending values. Never a crash.
#include <gtest/gtest.h>

#include <functional>

#include "loom/error.h"
#include "loom/ops.h"
#include "ops/infer.h"

namespace loom {
namespace {

// Runs `f` and checks it throws loom::Error whose message contains `expect`.
void expect_error(const std::function<void()>& f, const std::string& expect) {
  try {
    f();
    ADD_FAILURE() << "no loom::Error; expected one containing \"" << expect << "\"";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(expect), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << expect;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-loom exception: " << e.what();
  }
}

Tensor f32(const Shape& s) { return zeros(s); }
Tensor i64(const Shape& s) { return zeros(s, DType::i64); }

TEST(Misuse, MismatchedShapes) {
  expect_error(
      [] {
        matmul(f32({2, 3}), f32({4, 5}));
      },
      "[matmul] shapes [2,3] and [4,5] do not match");
  expect_error(
      [] {
        matmul(f32({3, 2}), f32({3, 5}), false, true);
      },
      "[matmul] shapes [3,2] and [3,5] do not match (with transpose flags)");
  expect_error(
      [] {
        add(f32({2, 3}), f32({4}));
      },
      "[add] shapes [2,3] and [4] cannot be broadcast");
  expect_error([] { where(zeros({2}, DType::boolean), f32({3}), f32({3})); },
               "[where] shapes [2] and [3] cannot be broadcast");
  expect_error(
      [] {
        concat({f32({2, 3}), f32({2, 4})}, 0);
      },
      "[concat] shapes [2,3] and [2,4] do not match outside axis 0");
  expect_error([] { reshape(f32({2, 3}), {4, 2}); }, "[reshape] cannot reshape [2,3] to [4,2]");
  expect_error([] { expand(f32({2, 3}), {2, 4}); }, "[expand] cannot expand [2,3] to [2,4]");
  expect_error(
      [] {
        layer_norm(f32({2, 4}), f32({3}), f32({4}));
      },
      "[layer_norm] weight [3] and bias [4] must be [4]");
  expect_error(
      [] {
        cross_entropy(f32({4, 5}), i64({3}));
      },
      "[cross_entropy] logits [4,5] and target [3] must be [N, C] and [N]");
  expect_error(
      [] {
        scaled_dot_product_attention(f32({2, 3, 4}), f32({2, 5, 3}), f32({2, 5, 4}));
      },
      "[attention] shapes q [2,3,4], k [2,5,3], v [2,5,4] do not match");
  expect_error(  // kv heads (3) must divide the q heads (4)
      [] {
        scaled_dot_product_attention(f32({1, 4, 2, 8}), f32({1, 3, 2, 8}), f32({1, 3, 2, 8}));
      },
      "[attention] shapes q [1,4,2,8], k [1,3,2,8], v [1,3,2,8] do not match");
  expect_error(
      [] {
        index_add(f32({5, 3}), 0, i64({2}), f32({2, 4}));
      },
      "[index_add] source shape [2,4] should be [2,3]");
  expect_error(
      [] {
        index_copy(f32({5, 3}), 0, i64({2}), f32({2, 4}));
      },
      "[index_copy] source shape [2,4] should be [2,3]");
  expect_error(
      [] {
        index_copy(f32({1, 2, 8, 4}), 2, i64({1}), f32({1, 2, 2, 4}));
      },
      "[index_copy] source shape [1,2,2,4] should be [1,2,1,4]");
  expect_error(
      [] {
        index_copy(f32({5, 3}), 0, i64({2, 1}), f32({2, 3}));
      },
      "[index_copy] index must be 1-D, got [2,1]");
  expect_error(
      [] {
        index_copy(f32({5, 3}), 0, i64({2}), zeros({2, 3}, DType::bf16));
      },
      "[index_copy] dtypes differ: self float32, source bfloat16");
  expect_error(
      [] {
        index_copy(f32({5, 3}), 0, f32({2}), f32({2, 3}));
      },
      "[index_copy] index dtype float32 is not supported");
  expect_error(
      [] {
        split(f32({5}), std::vector<int64_t>{2, 2}, 0);
      },
      "[split] sizes [2,2] do not sum to 5 along axis 0");
}

TEST(Misuse, BadAxis) {
  expect_error([] { softmax(f32({2, 3}), 2); }, "[softmax] axis 2 is out of range for rank 2");
  expect_error([] { sum(f32({2, 3}), {-3}); }, "[sum] axis -3 is out of range for rank 2");
  expect_error([] { mean(f32({2, 3}), {1, -1}); }, "[mean] axis 1 is repeated");
  expect_error([] { argmax(f32({2, 3}), 5); }, "[argmax] axis 5 is out of range for rank 2");
  expect_error([] { slice(f32({2, 3}), 2, 0, 1); }, "[slice] axis 2 is out of range for rank 2");
  expect_error(
      [] {
        concat({f32({2}), f32({2})}, 1);
      },
      "[concat] axis 1 is out of range for rank 1");
  expect_error(
      [] {
        gather(f32({2, 3}), 2, i64({2, 3}));
      },
      "[gather] axis 2 is out of range for rank 2");
  expect_error(
      [] {
        index_copy(f32({2, 3}), 2, i64({1}), f32({2, 1}));
      },
      "[index_copy] axis 2 is out of range for rank 2");
  expect_error([] { permute(f32({2, 3}), {0}); }, "[permute] perm of length 1 for rank 2");
  expect_error([] { permute(f32({2, 3}), {1, 1}); }, "[permute] axis 1 is repeated");
  expect_error(
      [] {
        transpose(f32({2, 3}), 0, 3);
      },
      "[transpose] axis 3 is out of range for rank 2");
  expect_error([] { index_select(f32({}), 0, i64({1})); }, "[index_select]");
  expect_error(
      [] {
        max(f32({0, 3}), {0});
      },
      "[max] cannot reduce an empty dimension of shape [0,3]");
}

TEST(Misuse, UnsupportedDtype) {
  expect_error(
      [] {
        matmul(i64({2, 2}), i64({2, 2}));
      },
      "[matmul] dtype int64 is not supported (needs a floating dtype)");
  expect_error(
      [] {
        matmul(f32({2, 2}), f32({2, 2}).to(DType::bf16));
      },
      "[matmul] dtypes float32 and bfloat16 differ");
  expect_error([] { mean(i64({3})); }, "[mean] dtype int64 is not supported");
  expect_error([] { softmax(i64({3})); }, "[softmax] dtype int64 is not supported");
  expect_error(
      [] {
        gather(f32({2, 3}), 1, f32({2, 3}));
      },
      "[gather] index dtype float32 is not supported (needs int32 or int64)");
  expect_error(
      [] {
        embedding(f32({4, 2}), f32({3}));
      },
      "[embedding] index dtype float32 is not supported");
  expect_error([] { where(f32({2}), f32({2}), f32({2})); },
               "[where] condition dtype float32 is not bool");
  expect_error([] { sub(zeros({2}, DType::boolean), zeros({2}, DType::boolean)); },
               "[sub] dtype bool is not supported");
  expect_error([] { neg(zeros({2}, DType::boolean)); }, "[neg] dtype bool is not supported");
  expect_error([] { i64({2}).requires_grad_(); },
               "[requires_grad_] dtype int64 cannot require grad");
  expect_error([] { randn({2}, DType::i32); }, "[normal] dtype int32 is not supported");
  // The GELU gradient ops take floating grad and x (autograd emits them).
  ops::TensorType f{{2, 3}, DType::f32}, ints{{2, 3}, DType::i32};
  expect_error(
      [&] {
        ops::infer_type(ops::OpKind::k_gelu_backward, {f, ints}, {});
      },
      "[gelu_backward] dtype int32 is not supported (needs a floating dtype)");
  expect_error(
      [&] {
        ops::infer_type(ops::OpKind::k_gelu_tanh_backward, {ints, f}, {});
      },
      "[gelu_tanh_backward] dtype int32 is not supported (needs a floating dtype)");
  expect_error(
      [&] {
        ops::infer_type(ops::OpKind::k_gelu_tanh_backward, {f, {{4}, DType::f32}}, {});
      },
      "[gelu_tanh_backward] shapes [2,3] and [4] cannot be broadcast");
}

TEST(Misuse, BadIndexValue) {
  Tensor w = f32({10, 4});
  expect_error(
      [&] {
        embedding(w, tensor_i64({1, 10}, {2}));
      },
      "[embedding] index 10 is out of range for size 10");
  expect_error([&] { embedding(w, tensor_i64({-1}, {1})); },
               "[embedding] index -1 is out of range for size 10");
  expect_error(
      [] {
        gather(f32({2, 3}), 1, tensor_i64({0, 3}, {1, 2}));
      },
      "[gather] index 3 is out of range for size 3");
  expect_error(
      [] {
        index_select(f32({2, 3}), 0, tensor_i64({2}, {1}));
      },
      "[index_select] index 2 is out of range for size 2");
  expect_error(
      [] {
        scatter_add(f32({2, 3}), 0, tensor_i64({5}, {1, 1}), f32({1, 1}));
      },
      "[scatter_add] index 5 is out of range for size 2");
  expect_error(
      [] {
        index_copy(f32({2, 3}), 0, tensor_i64({0, 2}, {2}), f32({2, 3}));
      },
      "[index_copy] index 2 is out of range for size 2");
  expect_error(
      [] {
        index_copy(f32({1, 2, 4, 3}), 2, tensor_i64({-1}, {1}), f32({1, 2, 1, 3}));
      },
      "[index_copy] index -1 is out of range for size 4");
  expect_error(
      [] {
        one_hot(tensor_i64({0, 4}, {2}), 4);
      },
      "[one_hot] index 4 is out of range for size 4");
  expect_error(
      [] {
        cross_entropy(f32({2, 5}), tensor_i64({1, 7}, {2}));
      },
      "[cross_entropy] target 7 is out of range for 5 classes");
  expect_error([] { one_hot(tensor_i64({0}, {1}), 0); },
               "[one_hot] num_classes must be positive, got 0");
}

TEST(Misuse, WrongOperandCountOrUndefinedTensor) {
  using ops::OpKind;
  ops::TensorType t{{2}, DType::f32};
  expect_error([&] { ops::infer_type(OpKind::k_add, {t}, {}); }, "[add] expects 2 operands, got 1");
  expect_error(
      [&] {
        ops::infer_type(OpKind::k_exp, {t, t}, {});
      },
      "[exp] expects 1 operands, got 2");
  expect_error(
      [&] {
        ops::infer_type(OpKind::k_attention, {t, t}, {});
      },
      "[attention] expects q, k, v and an optional mask, got 2 operands");
  expect_error([&] { ops::infer_type(OpKind::k_concat, {}, {}); },
               "[concat] needs at least one operand");
  expect_error([] { concat({}, 0); }, "[concat] needs at least one tensor");
  expect_error([] { add(Tensor(), f32({2})); }, "[add] operand is an undefined tensor");
  expect_error([] { exp(Tensor()); }, "[exp] operand is an undefined tensor");
  expect_error([] { matmul(f32({2, 2}), Tensor()); }, "[matmul] operand is an undefined tensor");
  expect_error([] { softmax(Tensor()); }, "[softmax] operand is an undefined tensor");
  expect_error([] { sum(Tensor()); }, "[sum] operand is an undefined tensor");
  expect_error([] { reshape(Tensor(), {2}); }, "[reshape] operand is an undefined tensor");
  expect_error([] { add(Tensor(), 1.0); }, "[add] operand is an undefined tensor");
}

TEST(Misuse, OperandsOnDifferentDevices) {
  Tensor a = zeros({2}, DType::f32, Device("cpu"));
  Tensor b = zeros({2}, DType::f32, Device("cpu:reference"));
  expect_error([&] { add(a, b); }, "[add] operands on devices cpu and cpu:reference");
  expect_error(
      [&] {
        matmul(reshape(b, {1, 2}), reshape(a, {2, 1}));
      },
      "[matmul] operands on devices cpu:reference and cpu");
  expect_error([&] { concat({a, b}, 0); }, "[concat] operands on devices cpu and cpu:reference");
  expect_error([] { Device("gpu"); }, "[device] unknown device 'gpu'");
}

TEST(Misuse, BadScalarArguments) {
  expect_error([] { dropout(f32({2}), 1.0); }, "[dropout] p must be in [0, 1), got 1");
  expect_error([] { gelu(f32({2}), "fast"); },
               "[gelu] approximate must be 'none' or 'tanh', got 'fast'");
  expect_error(
      [] {
        cross_entropy(f32({2, 3}), i64({2}), -100, 1.5);
      },
      "[cross_entropy] label_smoothing must be in [0, 1], got 1.5");
  expect_error([] { slice(f32({4}), 0, 0, 4, 0); }, "[slice] step must be positive, got 0");
  expect_error([] { split(f32({4}), int64_t{0}, 0); },
               "[split] split_size must be positive, got 0");
  expect_error([] { arange(0, 3, 0); }, "[arange] step must be non-zero");
  expect_error([] { full({2, -1}, 1.0); }, "[full] negative dim in shape [2,-1]");
  expect_error([] { reshape(f32({6}), {-1, -1}); }, "[reshape] more than one -1 in [-1,-1]");
  expect_error([] { expand(f32({3}), {-2, 3}); }, "[expand] cannot expand [3] to [-2,3]");
  expect_error([] { split(f32({}), int64_t{1}, 0); }, "[split]");
}

}  // namespace
}  // namespace loom
