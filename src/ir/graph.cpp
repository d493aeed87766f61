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
uint64_t attr_word(int64_t v) { return static_cast<uint64_t>(v); }
uint64_t attr_word(double v) { return bits(v); }
uint64_t attr_word(bool v) { return v ? 1 : 0; }
uint64_t attr_word(DType v) { return static_cast<uint64_t>(v); }
Hash128 hash_attr(Hash128 h, const std::vector<int64_t>& v) { return hash_ints(h, v); }
template <typename T>
Hash128 hash_attr(Hash128 h, const T& v) {
  return hash_combine(h, attr_word(v));
}
}  // namespace

// Hashes the op's name, its type and each non-default attribute as (name,
// value): a field added to attrs.def at its default leaves every existing
// hash (and on-disk cache file name) alone, and no two fields can collide.
Hash128 instr_hash(const Instr& in) {
  Hash128 h{0x6c6f6f6d, 0x69723033};
  h = hash_combine(h, op_key(in.op));
  h = hash_type(h, in.type);
  ops::for_each_attr(in.attrs, [&](const char* name, const auto& value, const auto& default_value) {
    if (ops::is_default(value, default_value)) return;
    h = hash_attr(hash_string(h, name), value);
  });
  return h;
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
