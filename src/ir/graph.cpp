// Graph hashing and verification.
#include "ir/graph.h"

#include <array>
#include <cstring>

#include "loom/error.h"
#include "ops/infer.h"

namespace loom::ir {

const ops::TensorType& Graph::type_of(int value) const {
  return is_input(value) ? inputs[value] : instr_of(value).type;
}

namespace {
Hash128 hash_type(Hash128 h, const ops::TensorType& t) {
  h = hash_combine(h, static_cast<uint64_t>(t.dtype));
  h = hash_combine(h, t.shape.size());
  for (int64_t d : t.shape) h = hash_combine(h, static_cast<uint64_t>(d));
  return h;
}
Hash128 hash_ints(Hash128 h, const std::vector<int64_t>& v) {
  h = hash_combine(h, v.size());
  for (int64_t x : v) h = hash_combine(h, static_cast<uint64_t>(x));
  return h;
}
// An op's key in the hash: its name, not its number in ops.def. The on-disk
// compile cache (lazy/compile_cache.cpp) names files by these hashes, and
// inserting an op into ops.def renumbers every op after it, so a number would
// let an older build's file answer for a different op.
uint64_t op_key(ops::OpKind op) {
  static const std::array<uint64_t, ops::kNumOps> table = [] {
    std::array<uint64_t, ops::kNumOps> t{};
    for (int i = 0; i < ops::kNumOps; ++i) {
      Hash128 h = hash_string(Hash128{}, ops::op_name(static_cast<ops::OpKind>(i)));
      t[static_cast<size_t>(i)] = h.lo ^ h.hi;
    }
    return t;
  }();
  return table[static_cast<size_t>(op)];
}
uint64_t bits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  return b;
}
}  // namespace

Hash128 instr_hash(const Instr& in) {
  const ops::Attrs& a = in.attrs;
  Hash128 h{0x6c6f6f6d, 0x69723031};
  h = hash_combine(h, op_key(in.op));
  h = hash_type(h, in.type);
  h = hash_ints(h, a.shape);
  h = hash_ints(h, a.axes);
  for (const auto* perm : {&a.perm_a, &a.perm_b, &a.perm_out}) h = hash_ints(h, *perm);
  for (int64_t v : {a.axis, a.start, a.end, a.step, a.index}) h = hash_combine(h, uint64_t(v));
  h = hash_combine(h, bits(a.scalar));
  h = hash_combine(h, bits(a.scalar2));
  uint64_t flags = uint64_t(a.dtype) | uint64_t(a.keepdim) << 8 | uint64_t(a.trans_a) << 9 |
                   uint64_t(a.trans_b) << 10 | uint64_t(a.causal) << 11;
  return hash_combine(h, flags);
}

Hash128 graph_hash(const Graph& g) {
  Hash128 h{0x67726170, 0x68686173};
  h = hash_combine(h, g.inputs.size());
  for (const auto& t : g.inputs) h = hash_type(h, t);
  for (const Instr& in : g.instrs) {
    h = hash_combine(h, instr_hash(in));
    if (in.remat != 0) h = hash_combine(h, 0x72656d6174ULL ^ static_cast<uint64_t>(in.remat));
    h = hash_combine(h, in.operands.size());
    for (int v : in.operands) h = hash_combine(h, static_cast<uint64_t>(v));
  }
  h = hash_combine(h, g.outputs.size());
  for (int v : g.outputs) h = hash_combine(h, static_cast<uint64_t>(v));
  return h;
}

void verify(const Graph& g) {
  int first = static_cast<int>(g.inputs.size());
  for (size_t i = 0; i < g.instrs.size(); ++i) {
    const Instr& in = g.instrs[i];
    int id = first + static_cast<int>(i);
    std::vector<ops::TensorType> types;
    for (int v : in.operands) {
      LOOM_CHECK(v >= 0 && v < id, "[verifier] %", id, " = ", ops::op_name(in.op), " uses %", v,
                 " before it is defined");
      types.push_back(g.type_of(v));
    }
    ops::TensorType t = ops::infer_type(in.op, types, in.attrs);
    LOOM_CHECK(t == in.type, "[verifier] %", id, " = ", ops::op_name(in.op), " has type ",
               ops::to_string(in.type), " but its operands give ", ops::to_string(t));
  }
  for (int v : g.outputs)
    LOOM_CHECK(v >= 0 && v < g.num_values(), "[verifier] output %", v, " does not exist");
}

}  // namespace loom::ir
