// The per-family lowering functions behind lower_to_stablehlo (stablehlo.cpp):
// each writes the StableHLO of one loom instr into the emitter and returns
// the Val holding its result (shape and dtype of instr.type). `args` are the
// instr's operands, already lowered. Families, one file each:
//   lower_elementwise.cpp   unary/binary/compare/where/cast, full, arange
//   lower_reduce_matmul.cpp sum/mean/max/min/var/argmax, matmul
//   lower_shape_index.cpp   reshape/permute/expand/slice/concat, embedding,
//                           gather/index_select/index_add/index_copy/scatter_add/
//                           one_hot
//   lower_random.cpp        Philox4x32-10 in integer ops: uniform/normal/dropout
//   lower_attention.cpp     attention_backward (dense, recomputing the probabilities)
// Numerics follow backends/reference/ (the oracle): bf16/f16 compute in f32
// and round once at the end, as the cpu kernels do.
#pragma once

#include <vector>

#include "backends/xla/lower/emitter.h"
#include "ir/graph.h"

namespace loom::backends::xla {

/// x converted to `elem` the way the reference stores a value (core/dtype.cpp
/// store_from_double): to bool by != 0, floats to integers truncated with
/// non-finite values giving 0, integers and f64 to bf16/f16 through f32.
Val cast_to(HloEmitter& e, const Val& x, const std::string& elem);
/// cast_to(x, elem) broadcast (NumPy rules) to `shape`.
Val coerce(HloEmitter& e, const Val& x, const std::string& elem, const Shape& shape);

Val lower_elementwise(HloEmitter& e, const ir::Instr& in, const std::vector<Val>& args);
Val lower_reduce(HloEmitter& e, const ir::Instr& in, const std::vector<Val>& args);
Val lower_matmul(HloEmitter& e, const ir::Instr& in, const std::vector<Val>& args);
Val lower_shape(HloEmitter& e, const ir::Instr& in, const std::vector<Val>& args);
Val lower_index(HloEmitter& e, const ir::Instr& in, const std::vector<Val>& args);
Val lower_random(HloEmitter& e, const ir::Instr& in, const std::vector<Val>& args);
Val lower_attention_backward(HloEmitter& e, const ir::Instr& in, const std::vector<Val>& args);

/// Philox4x32-10 uniforms u[i] = philox::uniform(seed, offset, i) for the
/// elements of `shape` (row-major), f32 in [0, 1); `gen` is the i64[2]
/// (seed, offset) generator operand. Shared by dropout and attention's
/// dropout so both draw exactly what the cpu kernels draw.
Val philox_uniforms(HloEmitter& e, const Val& gen, const Shape& shape);
/// Inverted dropout of f32 x as the cpu kernel computes it: x / (1 - p) in
/// f64 rounded to f32 where u >= p, else 0 (cpu/dropout.h).
Val dropout_f32(HloEmitter& e, const Val& x, const Val& u, double p);

}  // namespace loom::backends::xla
