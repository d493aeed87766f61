// The op test table: the one list of op test cases, keyed by OpKind, that
// the forward tests (cpu vs reference over a dtype sweep), the finite-
// difference gradient checks and the coverage test all walk.
//
// A case builds its operands with a CaseEnv (seeded random data on a given
// device, in the dtype under test) and calls the public op function from
// loom/ops.h. Building the same case twice on two devices gives bit-identical
// operands, so the two results can be compared. Cases favour awkward shapes:
// size-1 and empty dims, sizes that are not a multiple of 8 or 16,
// broadcasts and rank 0.
//
// The table lives in op_cases_test.cpp and the op_cases_<family>_test.cpp
// files (CMake compiles only *_test.cpp files into loom_tests).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "loom/ops.h"
#include "loom/tensor.h"
#include "ops/attrs.h"
#include "ops/op_kind.h"

namespace loom::ops {
/// Prints an OpKind by name in gtest messages ("matmul", not "2-byte object").
inline void PrintTo(OpKind op, std::ostream* out) { *out << op_name(op); }
}  // namespace loom::ops

namespace loom::optest {

/// Where and in which dtype a case builds its operands, with a seeded
/// generator (std::mt19937_64; values are converted to the dtype on the host,
/// so every device receives the same bits).
class CaseEnv {
 public:
  CaseEnv(Device device, DType dtype, uint64_t seed);
  const Device& device() const { return device_; }
  /// The dtype under test (the dtype of the case's main data operands).
  DType dtype() const { return dtype_; }

  /// Values in [lo, hi) of the case dtype: floats uniform, integer dtypes
  /// integers in [ceil(lo), floor(hi)], bool true with probability 1/2.
  Tensor data(const Shape& shape, double lo = -2.0, double hi = 2.0);
  Tensor data(const Shape& shape, double lo, double hi, DType dtype);
  /// Floats with margin <= |x| < hi and random sign: clear of the kink at 0
  /// (relu, abs, sign) by more than a finite-difference step.
  Tensor away(const Shape& shape, double margin = 0.25, double hi = 2.0);
  /// Distinct values: a shuffled grid of multiples of `step` centred on 0
  /// (exact in bf16/f16 for small tensors), so max/min/argmax have no ties.
  Tensor distinct(const Shape& shape, double step = 0.25);
  /// Random multiples of `step` in [lo, hi] in the case dtype (ties on
  /// purpose; exact in every dtype for small values).
  Tensor grid(const Shape& shape, double lo, double hi, double step = 1.0);
  /// Integers in [lo, hi) (index operands), any integer dtype.
  Tensor ints(const Shape& shape, int64_t lo, int64_t hi, DType dtype = DType::i64);
  /// Exact values, converted to `dtype`.
  Tensor values(const std::vector<double>& v, const Shape& shape, DType dtype);
  /// Exact values in the case dtype.
  Tensor values(const std::vector<double>& v, const Shape& shape) {
    return values(v, shape, dtype_);
  }

 private:
  double unit();  // uniform [0, 1)
  Device device_;
  DType dtype_;
  std::mt19937_64 rng_;
};

using Inputs = std::vector<Tensor>;

/// One test case of one op.
struct OpCase {
  ops::OpKind op = ops::OpKind::k_abs;
  /// Short description, unique within the op ("broadcast_row", "empty").
  std::string name;
  /// The dtypes the forward test sweeps (first = the dtype used by the
  /// coverage test; gradient checks run in f32 when the list has it).
  std::vector<DType> dtypes;
  /// Builds the operands on env.device() in env.dtype().
  std::function<Inputs(CaseEnv& env)> make;
  /// Calls the public op function on the operands; env gives the device
  /// and dtype to nullary ops (full, arange, rand).
  std::function<Tensor(const Inputs& in, const CaseEnv& env)> run;
  /// Longest sum inside one output element (matmul K, reduced count): the
  /// forward tolerance grows with it.
  int64_t reduce_len = 1;
  /// The operands suit a finite-difference check (smooth there, small).
  bool grad = true;
  /// Finite-difference step for this case.
  double grad_eps = 4e-3;
  /// The result holds NaN on purpose (log of a negative, 0/0, NaN inputs): the
  /// forward tests then let NaN match NaN (ops/compare.h); otherwise any NaN fails.
  bool nan_expected = false;
  /// For kNondiff ops: the normalized attributes the public call builds for
  /// dtypes[0] (the coverage test feeds them to infer_type).
  std::optional<ops::Attrs> attrs;
};

/// The whole table, built once.
const std::vector<OpCase>& op_cases();
/// The cases of one op, in table order.
std::vector<const OpCase*> cases_for(ops::OpKind op);
/// "matmul/trans_b" — for test traces.
std::string case_label(const OpCase& c);
/// The seed of a case (a hash of its label), so adding cases changes no
/// other case's data.
uint64_t case_seed(const OpCase& c);

// Dtype lists for sweeps.
inline const std::vector<DType> kFloats = {DType::f32, DType::bf16, DType::f16};
inline const std::vector<DType> kNumeric = {DType::f32, DType::bf16, DType::f16, DType::i32,
                                            DType::i64};
inline const std::vector<DType> kAll = {DType::f32, DType::bf16, DType::f16,
                                        DType::i32, DType::i64,  DType::boolean};

// Table families (one file each), appending to `table`.
void add_elementwise_cases(std::vector<OpCase>& table);
void add_creation_cases(std::vector<OpCase>& table);
void add_reduce_matmul_cases(std::vector<OpCase>& table);
void add_shape_index_cases(std::vector<OpCase>& table);
void add_nn_cases(std::vector<OpCase>& table);
void add_cross_entropy_grad_cases(std::vector<OpCase>& table);
// attention with dropout, attention_backward
void add_attention_training_cases(std::vector<OpCase>& table);
void add_collective_cases(std::vector<OpCase>& table);  // all_reduce (one rank: identity)

}  // namespace loom::optest
