// Declarations of the gradient rules, one per op kind, generated from ops.def
// (rules_*.cpp define them). A kNondiff op has no rule: grad_rule gives nullptr.
#pragma once

#include "autograd/engine.h"

namespace loom::autograd::rules {

/// Operand `i` of `node` as recorded (shared by the rules_*.cpp files).
inline const Tensor& in(const GradNode& node, size_t i) { return node.inputs[i]; }

// grad_<name> for every op of ops.def (X-macro): defined in rules_*.cpp for
// each differentiable op; a kNondiff op's is declared only, never defined, and
// the table in rules.cpp stores nullptr for it without naming it.
#define LOOM_OP(name, arity, traits) \
  std::vector<Tensor> grad_##name(const GradNode& node, const Tensor& g);
#include "ops/ops.def"
#undef LOOM_OP

}  // namespace loom::autograd::rules
