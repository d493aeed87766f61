// Coverage of ops.def (STYLE.md "One table per concept"): walks the op list
// with its own LOOM_OP macro and fails for any op that lacks shape inference
// (infer_type on its first test case), a gradient rule (unless kNondiff; a
// kNondiff op must have none), a reference kernel, a cpu kernel, or a case
// in the op test table. Shape inference is checked by feeding infer_type the
// operand types and normalized attributes of the first case — taken from
// the recorded gradient node for differentiable ops, from the case's
// `attrs` for kNondiff ones — and comparing with the result actually built.
#include <gtest/gtest.h>

#include "autograd/engine.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/reference/reference.h"
#include "lazy/tensor_impl.h"
#include "loom/error.h"
#include "ops/infer.h"
#include "ops/op_cases.h"

namespace loom::optest {
namespace {

struct OpEntry {
  const char* name;
  ops::OpKind op;
};

// ops.def walked directly (not through op_kind.h's tables).
const std::vector<OpEntry>& def_entries() {
  static const std::vector<OpEntry> entries = {
#define LOOM_OP(name, arity, traits) {#name, ops::OpKind::k_##name},
#include "ops/ops.def"
#undef LOOM_OP
  };
  return entries;
}

TEST(Coverage, OpsDefMatchesOpKind) {
  ASSERT_EQ(def_entries().size(), static_cast<size_t>(ops::kNumOps));
  for (const OpEntry& e : def_entries()) {
    EXPECT_EQ(ops::op_name(e.op), e.name);
    EXPECT_EQ(ops::op_from_name(e.name), e.op);
  }
}

// Checks infer_type against the first case of `op`; returns a failure note
// or "" when inference works.
std::string check_inference(const OpCase& c) {
  CaseEnv env(Device("cpu:reference"), c.dtypes[0], case_seed(c));
  Inputs in = c.make(env);
  std::vector<ops::TensorType> types;
  ops::Attrs attrs;
  Tensor out;
  if (!ops::has_trait(c.op, ops::kNondiff)) {
    for (Tensor& t : in)
      if (is_floating(t.dtype())) t.requires_grad_(true);
    out = c.run(in, env);
    const auto& node = out.impl()->grad_fn;
    if (!node) return "first case records no node (needs a floating operand in dtypes[0])";
    if (node->op != c.op) return "first case runs " + std::string(ops::op_name(node->op));
    for (const Tensor& t : node->inputs) types.push_back(t.impl()->type);
    attrs = node->attrs;
  } else {
    if (!c.attrs) return "first case of a kNondiff op needs `attrs`";
    out = c.run(in, env);
    for (const Tensor& t : in) types.push_back(t.impl()->type);
    if (ops::has_trait(c.op, ops::kRandom)) types.push_back({{2}, DType::i64});
    attrs = *c.attrs;
  }
  ops::TensorType inferred;
  try {
    inferred = ops::infer_type(c.op, types, attrs);
  } catch (const Error& e) {
    return std::string("infer_type threw: ") + e.what();
  }
  if (!(inferred == out.impl()->type))
    return "infer_type gives " + ops::to_string(inferred) + " but the op built " +
           ops::to_string(out.impl()->type);
  return "";
}

TEST(Coverage, EveryOpHasInferenceRuleKernelsAndCases) {
  const backends::KernelBackend& ref = backends::reference_backend();
  const backends::KernelBackend& cpu = backends::cpu_backend();
  for (const OpEntry& e : def_entries()) {
    SCOPED_TRACE(e.name);
    bool nondiff = ops::has_trait(e.op, ops::kNondiff);
    if (nondiff)
      EXPECT_EQ(autograd::grad_rule(e.op), nullptr) << "kNondiff op with a rule";
    else
      EXPECT_NE(autograd::grad_rule(e.op), nullptr) << "no gradient rule";
    EXPECT_TRUE(ref.supports(e.op)) << "no reference kernel";
    EXPECT_TRUE(cpu.supports(e.op)) << "no cpu kernel";
    std::vector<const OpCase*> cases = cases_for(e.op);
    if (cases.empty()) {
      ADD_FAILURE() << "no case in the op test table";
      continue;
    }
    std::string note = check_inference(*cases[0]);
    EXPECT_EQ(note, "") << "shape inference on " << case_label(*cases[0]);
  }
}

}  // namespace
}  // namespace loom::optest
