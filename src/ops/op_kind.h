// OpKind: the enum generated from ops.def, with each op's name, arity and
// traits. ops/ knows nothing about tensors: only kinds, attributes and types.
#pragma once

#include <cstdint>
#include <string_view>

namespace loom::ops {

/// Traits of an op kind (bit flags).
enum OpTrait : uint32_t {
  kUnary = 1u << 0,      // elementwise, one operand
  kBinary = 1u << 1,     // elementwise with NumPy broadcasting, two operands
  kTernary = 1u << 2,    // elementwise with broadcasting, three operands (where)
  kCompare = 1u << 3,    // result dtype is bool
  kReduce = 1u << 4,     // reduces `axes` (all when empty), optional keepdim
  kShape = 1u << 5,      // moves data without arithmetic (reshape, permute, ...)
  kIndex = 1u << 6,      // gathers or scatters along an axis with an index operand
  kMatmul = 1u << 7,     // (batched) matrix product
  kComposite = 1u << 8,  // has a decomposition into simpler ops
  kRandom = 1u << 9,     // reads a Philox (seed, offset) generator operand
  kNullary = 1u << 10,   // no operands (constants, arange)
  kNondiff = 1u << 11,   // no gradient flows through it
  // Communicates with the other ranks when it runs (all_reduce): a side
  // effect, so passes never merge (CSE), drop (DCE) or fold it, and every
  // rank runs its collectives in program order.
  kCollective = 1u << 12,
};

enum class OpKind : uint16_t {
#define LOOM_OP(name, arity, traits) k_##name,
#include "ops/ops.def"
#undef LOOM_OP
};

inline constexpr int kNumOps = 0
#define LOOM_OP(name, arity, traits) +1
#include "ops/ops.def"
#undef LOOM_OP
    ;
static_assert(kNumOps == 68, "ops.def changed: update this count and the op test table");

/// The op's name as written in ops.def, e.g. "matmul".
std::string_view op_name(OpKind op);
/// Number of operands, -1 when variadic.
int op_arity(OpKind op);
/// Trait bit set.
uint32_t op_traits(OpKind op);
inline bool has_trait(OpKind op, OpTrait trait) { return (op_traits(op) & trait) != 0; }
/// Looks an op up by name; throws loom::Error "[ir] unknown op 'foo'".
OpKind op_from_name(std::string_view name);

/// One entry of a table generated from ops.def whose entry names a symbol
/// only some ops define (autograd's grad_<op>, the cpu backend's cpu_<op>):
/// own(0) when kOwn, else `fallback`. `own` is a generic lambda returning the
/// symbol, so it is instantiated, and the symbol used, only where kOwn:
///   table_entry<(kTraits & kNondiff) == 0>(GradRule{}, [](auto) { return &grad_abs; })
template <bool kOwn, typename T, typename Own>
constexpr T table_entry(T fallback, Own own) {
  if constexpr (kOwn) {
    return own(0);
  } else {
    return fallback;
  }
}

}  // namespace loom::ops
