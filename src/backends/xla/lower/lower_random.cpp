// Lowering of the random ops (uniform, normal, dropout) to StableHLO with
// loom's own Philox4x32-10 written in integer ops, so xla draws exactly the
// bits lazy:cpu draws for the same (seed, offset) (core/philox.h; Salmon et
// al., "Parallel Random Numbers: As Easy as 1, 2, 3", SC 2011). Element i of
// a draw is word i % 4 of block i / 4, the block's counter {i/4 low, i/4
// high, offset low, offset high} and key {seed low, seed high}. The 32 x 32
// -> 64-bit products of a round are ui64 multiplies split by shift / and;
// the ten rounds are unrolled. Conversions are the cpu kernels'
// (cpu/random.cpp): uniform = (word >> 8) * 2^-24 in f32; dropout keeps x
// where u >= p (compared in f64) and stores f32(f64(x) / (1 - p)); normal is
// Box-Muller on uniforms 2i, 2i+1 in f64, rounded to f32. XLA's
// rng_bit_generator is not used: its PHILOX counter layout is XLA's, not loom's.
#include <numbers>

#include "backends/xla/lower/lower_ops.h"
#include "loom/error.h"

namespace loom::backends::xla {

using ops::OpKind;

namespace {

constexpr uint32_t kPhiloxM0 = 0xD2511F53, kPhiloxM1 = 0xCD9E8D57;  // multipliers (SC11)
constexpr uint32_t kPhiloxW0 = 0x9E3779B9, kPhiloxW1 = 0xBB67AE85;  // Weyl key increments

Val philox_lo32(HloEmitter& e, const Val& v) {
  return e.convert(e.binary("stablehlo.and", v, e.int_constant(0xFFFFFFFFu, "ui64", v.shape)),
                   "ui32");
}
Val philox_hi32(HloEmitter& e, const Val& v) {
  return e.convert(
      e.binary("stablehlo.shift_right_logical", v, e.int_constant(32, "ui64", v.shape)), "ui32");
}

// Element k of the i64[2] generator state as a ui64 scalar.
Val philox_state_word(HloEmitter& e, const Val& gen, int64_t k) {
  return e.bitcast(e.reshape(e.slice_axis(gen, 0, k, 1), {}), "ui64");
}

// The four words of Philox4x32-10 blocks 0 .. blocks-1 under gen, each [blocks].
std::vector<Val> philox_blocks(HloEmitter& e, const Val& gen, int64_t blocks) {
  Shape s{blocks};
  Val seed = philox_state_word(e, gen, 0), offset = philox_state_word(e, gen, 1);
  Val counter = e.iota(s, 0, "ui64");
  std::vector<Val> c = {philox_lo32(e, counter), philox_hi32(e, counter),
                        e.broadcast_to(philox_lo32(e, offset), s),
                        e.broadcast_to(philox_hi32(e, offset), s)};
  Val k0 = philox_lo32(e, seed), k1 = philox_hi32(e, seed);
  Val m0 = e.int_constant(kPhiloxM0, "ui64", s), m1 = e.int_constant(kPhiloxM1, "ui64", s);
  for (uint32_t round = 0; round < 10; ++round) {
    e.comment("philox round " + std::to_string(round));
    Val key0 = e.broadcast_to(
        e.binary("stablehlo.add", k0, e.int_constant(uint32_t(round * kPhiloxW0), "ui32")), s);
    Val key1 = e.broadcast_to(
        e.binary("stablehlo.add", k1, e.int_constant(uint32_t(round * kPhiloxW1), "ui32")), s);
    Val p0 = e.binary("stablehlo.multiply", e.convert(c[0], "ui64"), m0);
    Val p1 = e.binary("stablehlo.multiply", e.convert(c[2], "ui64"), m1);
    Val n0 = e.binary("stablehlo.xor", e.binary("stablehlo.xor", philox_hi32(e, p1), c[1]), key0);
    Val n2 = e.binary("stablehlo.xor", e.binary("stablehlo.xor", philox_hi32(e, p0), c[3]), key1);
    c = {n0, philox_lo32(e, p1), n2, philox_lo32(e, p0)};
  }
  return c;
}

Val philox_normal(HloEmitter& e, const ir::Instr& in, const Val& gen) {
  const Shape& shape = in.type.shape;
  int64_t n = numel(shape);
  if (n == 0) return e.constant(0, mlir_elem(in.type.dtype), shape);
  Val u = e.reshape(philox_uniforms(e, gen, {2 * n}), {n, 2});
  Val u1 = e.convert(e.reshape(e.slice_axis(u, 1, 0, 1), shape), "f64");
  Val u2 = e.convert(e.reshape(e.slice_axis(u, 1, 1, 1), shape), "f64");
  auto c = [&](double v) { return e.constant(v, "f64", shape); };
  Val r = e.unary("stablehlo.log", e.binary("stablehlo.subtract", c(1.0), u1));
  r = e.unary("stablehlo.sqrt", e.binary("stablehlo.multiply", c(-2.0), r));
  Val t =
      e.unary("stablehlo.cosine", e.binary("stablehlo.multiply", c(2.0 * std::numbers::pi), u2));
  return cast_to(e, e.convert(e.binary("stablehlo.multiply", r, t), "f32"),
                 mlir_elem(in.type.dtype));
}

}  // namespace

Val philox_uniforms(HloEmitter& e, const Val& gen, const Shape& shape) {
  int64_t n = numel(shape);
  if (n == 0) return e.constant(0, "f32", shape);
  int64_t blocks = (n + 3) / 4;
  e.comment("Philox4x32-10 uniforms for " + tensor_type(shape, "f32") + " (core/philox.h)");
  std::vector<Val> w = philox_blocks(e, gen, blocks);
  std::vector<Val> cols;
  for (const Val& v : w) cols.push_back(e.reshape(v, {blocks, 1}));
  Val words = e.reshape(e.concatenate(cols, 1), {blocks * 4});  // element i = word i%4 of i/4
  if (blocks * 4 != n) words = e.slice_axis(words, 0, 0, n);
  words = e.reshape(words, shape);
  Val bits = e.binary("stablehlo.shift_right_logical", words, e.int_constant(8, "ui32", shape));
  return e.binary("stablehlo.multiply", e.convert(bits, "f32"),
                  e.constant(1.0 / 16777216.0, "f32", shape));
}

Val dropout_f32(HloEmitter& e, const Val& x, const Val& u, double p) {
  Val keep = e.compare("GE", e.convert(u, "f64"), e.constant(p, "f64", u.shape));
  Val q = e.binary("stablehlo.divide", e.convert(x, "f64"), e.constant(1.0 - p, "f64", x.shape));
  return e.select(keep, e.convert(q, "f32"), e.constant(0, "f32", x.shape));
}

Val lower_random(HloEmitter& e, const ir::Instr& in, const std::vector<Val>& args) {
  std::string out = mlir_elem(in.type.dtype);
  switch (in.op) {
    case OpKind::k_uniform:
      return cast_to(e, philox_uniforms(e, args[0], in.type.shape), out);
    case OpKind::k_normal:
      return philox_normal(e, in, args[0]);
    case OpKind::k_dropout: {
      Val u = philox_uniforms(e, args[1], in.type.shape);
      return cast_to(e, dropout_f32(e, cast_to(e, args[0], "f32"), u, in.attrs.dropout_p), out);
    }
    default:
      fail("[xla] cannot lower ", ops::op_name(in.op), " (not a random op)");
  }
}

}  // namespace loom::backends::xla
