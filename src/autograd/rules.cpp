// The gradient-rule table, keyed by op kind, generated from ops.def (one entry
// per line: nullptr for a kNondiff op).
// Rules are written with loom ops so they trace on the lazy device too.
#include "autograd/rules.h"
#include "autograd/engine.h"

namespace loom::autograd {

GradRule grad_rule(ops::OpKind op) {
  using namespace ops;  // the trait names ops.def uses
  static constexpr GradRule kTable[] = {
// A kNondiff op's entry is nullptr; its grad_<name> is never named (ops::table_entry).
#define LOOM_OP(name, arity, traits)                            \
  ops::table_entry<((traits)&kNondiff) == 0>(GradRule{nullptr}, \
                                             [](auto) { return &rules::grad_##name; }),
#include "ops/ops.def"
#undef LOOM_OP
  };
  static_assert(sizeof(kTable) / sizeof(kTable[0]) == kNumOps);
  return kTable[static_cast<int>(op)];
}

}  // namespace loom::autograd
