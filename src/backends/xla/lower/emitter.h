// HloEmitter: writes the body of one StableHLO func as readable MLIR text,
// one SSA value per line (`%12 = stablehlo.add %10, %11 : tensor<4x8xf32>`).
// A Val is an SSA name with its shape and MLIR element type ("f32", "bf16",
// "f16", "f64", "i1", "i32", "i64", "ui32", "ui64"). The helpers check
// nothing about shapes beyond what they compute: the lowering functions
// (lower_*.cpp) pass operands whose types ops::infer_type already checked,
// and the compiler (MLIR's verifier in the plugin) rejects anything else.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/dtype.h"
#include "loom/shape.h"

namespace loom::backends::xla {

struct Val {
  std::string name;  // "%12", "%arg0"
  Shape shape;
  std::string elem;  // MLIR element type
};

/// "f32", "bf16", "f16", "i32", "i64", "i1" for loom's dtypes.
std::string mlir_elem(DType dtype);
/// "tensor<2x3xf32>", "tensor<f32>" for rank 0.
std::string tensor_type(const Shape& shape, const std::string& elem);
inline std::string tensor_type(const Val& v) { return tensor_type(v.shape, v.elem); }
inline bool is_float_elem(const std::string& e) { return e[0] == 'f' || e == "bf16"; }
inline bool is_unsigned_elem(const std::string& e) { return e[0] == 'u' || e == "i1"; }

class HloEmitter {
 public:
  /// The body written so far (indented lines, no func header).
  const std::string& body() const { return body_; }
  /// Appends a comment line ("// attention_backward: P = softmax(...)").
  void comment(const std::string& text);
  /// Writes `%N = <rhs>` and returns %N with the given type.
  Val emit(const std::string& rhs, const Shape& shape, const std::string& elem);

  // ---- constants ----
  /// A splat constant of `value` rounded to `elem` as the reference stores it
  /// (double -> float -> bf16/f16; integers truncated, non-finite -> 0).
  Val constant(double value, const std::string& elem, const Shape& shape = {});
  /// An integer splat constant given exactly (for ui32/ui64 bit patterns).
  Val int_constant(uint64_t bits, const std::string& elem, const Shape& shape = {});
  Val iota(const Shape& shape, int64_t dim, const std::string& elem);

  // ---- elementwise (operands already of one shape and element type) ----
  Val unary(const char* op, const Val& x);
  Val binary(const char* op, const Val& a, const Val& b);
  /// direction EQ/NE/LT/LE/GT/GE; compare type from the element type.
  Val compare(const char* direction, const Val& a, const Val& b);
  Val select(const Val& cond, const Val& a, const Val& b);
  Val convert(const Val& x, const std::string& elem);
  Val bitcast(const Val& x, const std::string& elem);

  // ---- shapes ----
  Val reshape(const Val& x, const Shape& shape);
  Val transpose(const Val& x, const std::vector<int64_t>& perm);
  /// broadcast_in_dim: operand dim i becomes result dim dims[i].
  Val broadcast_in_dim(const Val& x, const Shape& shape, const std::vector<int64_t>& dims);
  /// NumPy broadcast of x to `shape` (trailing dims aligned); x when equal.
  Val broadcast_to(const Val& x, const Shape& shape);
  Val slice(const Val& x, const std::vector<int64_t>& start, const std::vector<int64_t>& limit,
            const std::vector<int64_t>& strides);
  /// x[..., start:start+size:1, ...] along one axis.
  Val slice_axis(const Val& x, int64_t axis, int64_t start, int64_t size);
  Val concatenate(const std::vector<Val>& xs, int64_t axis);

  // ---- reductions and products ----
  /// stablehlo.reduce of x over `dims` with the binary `op` ("stablehlo.add",
  /// "stablehlo.maximum", ...) from `init` (a scalar of x's element type).
  Val reduce(const Val& x, const Val& init, const std::vector<int64_t>& dims, const char* op);
  /// dot_general with the given batching / contracting dims; result element
  /// type `elem` (f32 accumulation of bf16/f16 operands). With `elem` f32 and
  /// both operands converts of bf16 (or both of f16) values, it multiplies
  /// those values instead: the same numbers (the widening is exact, and so is
  /// each product in f32), but a bf16 GEMM, which a GPU runs on its tensor cores.
  Val dot_general(const Val& a, const Val& b, const std::vector<int64_t>& batch_a,
                  const std::vector<int64_t>& batch_b, const std::vector<int64_t>& contract_a,
                  const std::vector<int64_t>& contract_b, const std::string& elem);

  /// Appends raw text lines (regions of gather/scatter/argmax), indented.
  void raw(const std::string& text);
  /// A fresh SSA name without emitting anything.
  std::string fresh();

 private:
  std::string body_;
  int next_ = 0;
  std::map<std::string, Val> widened_;  // an f32 convert's name -> its bf16/f16 operand
};

/// "[0, 1, 2]" and "array<i64: 0, 1, 2>" renderings of an int list.
std::string int_list(const std::vector<int64_t>& v);
std::string i64_array(const std::vector<int64_t>& v);

}  // namespace loom::backends::xla
