// Which ops have optimized cpu kernels: every op of ops.def, by a table
// generated from ops.def (X-macro), so a new op joins it by its ops.def line
// and its kernel: an elementwise unary op (cast included) runs cpu_unary, a
// binary one (comparisons included) cpu_binary, a reduction cpu_reduce, and
// any other op its own cpu_<name> (kernels.h). A kernel may still hand a
// rare dtype case (bool arithmetic, integer pow_scalar, bool
// index_add/scatter_add, zero-width attention) to the reference kernel.
#include "backends/cpu/kernels.h"

namespace loom::backends::cpu {

// cpu_<name> for every op of ops.def: declared, so the table below can name
// it; defined (kernels.h) only for the ops outside the three families, the
// only ones whose own kernel the table takes.
#define LOOM_OP(name, arity, traits) void cpu_##name(const OpCall& call);
#include "ops/ops.def"
#undef LOOM_OP

namespace {

// Whether an op of ops.def with `traits` shares its family's kernel. Decided
// from the traits alone: a function address compared with nullptr is not a
// constant expression under -fsanitize (gcc 12), so the template argument
// below must not ask cpu_family_kernel.
constexpr bool in_kernel_family(uint32_t traits) {
  return (traits & (ops::kUnary | ops::kBinary | ops::kReduce)) != 0;
}

// The kernel an op of ops.def with `traits` shares with its family, or nullptr.
constexpr Kernel cpu_family_kernel(uint32_t traits) {
  if (traits & ops::kUnary) return cpu_unary;
  if (traits & ops::kBinary) return cpu_binary;
  if (traits & ops::kReduce) return cpu_reduce;
  return nullptr;
}

}  // namespace

Kernel optimized_kernel(ops::OpKind op) {
  using namespace ops;  // the trait names ops.def uses
  static constexpr Kernel kTable[] = {
// A family op's entry is its family's kernel; its cpu_<name> is never named
// (ops::table_entry).
#define LOOM_OP(name, arity, traits)                                         \
  ops::table_entry<!in_kernel_family(traits)>(cpu_family_kernel(traits),     \
                                              [](auto) { return &cpu_##name; }),
#include "ops/ops.def"
#undef LOOM_OP
  };
  static_assert(sizeof(kTable) / sizeof(kTable[0]) == kNumOps);
  return kTable[static_cast<int>(op)];
}

}  // namespace loom::backends::cpu
