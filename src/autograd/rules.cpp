// The gradient-rule table, keyed by op kind (one entry per ops.def line).
// Rules are written with loom ops so they trace on the lazy device too.
#include "autograd/engine.h"
#include "autograd/rules.h"

namespace loom::autograd {

GradRule grad_rule(ops::OpKind op) {
  static const GradRule kTable[] = {
#define LOOM_OP(name, arity, traits) rules::grad_##name,
#include "ops/ops.def"
#undef LOOM_OP
  };
  return kTable[static_cast<int>(op)];
}

}  // namespace loom::autograd
