// Name, arity and trait tables generated from ops.def.
#include "ops/op_kind.h"

#include "loom/error.h"

namespace loom::ops {
namespace {
struct OpInfo {
  std::string_view name;
  int arity;
  uint32_t traits;
};
constexpr OpInfo kOpInfo[] = {
#define LOOM_OP(name, arity, traits) {#name, arity, traits},
#include "ops/ops.def"
#undef LOOM_OP
};
}  // namespace

std::string_view op_name(OpKind op) { return kOpInfo[static_cast<int>(op)].name; }
int op_arity(OpKind op) { return kOpInfo[static_cast<int>(op)].arity; }
uint32_t op_traits(OpKind op) { return kOpInfo[static_cast<int>(op)].traits; }

OpKind op_from_name(std::string_view name) {
  for (int i = 0; i < kNumOps; ++i)
    if (kOpInfo[i].name == name) return static_cast<OpKind>(i);
  fail("[ir] unknown op '", name, "'");
}

}  // namespace loom::ops
