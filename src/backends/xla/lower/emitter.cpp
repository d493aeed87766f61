// HloEmitter: the MLIR text of StableHLO ops (see emitter.h). Syntax is
// StableHLO's pretty form where it has one (`stablehlo.add %a, %b : T`), the
// generic form `"stablehlo.slice"(%x) {...} : (T) -> U` elsewhere; both are
// what the StableHLO spec (github.com/openxla/stablehlo, docs/spec.md) and
// its printer use.
#include "backends/xla/lower/emitter.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "loom/error.h"

namespace loom::backends::xla {

std::string mlir_elem(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return "f32";
    case DType::bf16:
      return "bf16";
    case DType::f16:
      return "f16";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
    case DType::boolean:
      return "i1";
  }
  fail("[xla] unknown dtype");
}

std::string tensor_type(const Shape& shape, const std::string& elem) {
  std::string t = "tensor<";
  for (int64_t d : shape) t += std::to_string(d) + "x";
  return t + elem + ">";
}

std::string int_list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string i64_array(const std::vector<int64_t>& v) {
  std::string s = "array<i64";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : ": ") + std::to_string(v[i]);
  return s + ">";
}

namespace {

// The literal of `value` as the reference stores it in `elem` (core/dtype.cpp
// store_from_double): decimal with enough digits to round-trip for f32/f64,
// the exact bit pattern in hex for bf16/f16 and for non-finite values.
std::string emitter_float_literal(double value, const std::string& elem) {
  char buf[64];
  if (elem == "f64") {
    if (std::isfinite(value)) {
      std::snprintf(buf, sizeof buf, "%.16e", value);
    } else {
      uint64_t bits;
      std::memcpy(&bits, &value, 8);
      std::snprintf(buf, sizeof buf, "0x%016" PRIX64, bits);
    }
    return buf;
  }
  float f = static_cast<float>(value);
  if (elem == "bf16" || elem == "f16") {
    uint16_t bits = elem == "bf16" ? float_to_bf16(f) : float_to_f16(f);
    std::snprintf(buf, sizeof buf, "0x%04X", bits);
    return buf;
  }
  if (std::isfinite(f)) {
    std::snprintf(buf, sizeof buf, "%.8e", double(f));
  } else {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    std::snprintf(buf, sizeof buf, "0x%08" PRIX32, bits);
  }
  return buf;
}

std::string emitter_int_literal(double value, const std::string& elem) {
  if (elem == "i1") return value != 0.0 ? "true" : "false";
  if (!std::isfinite(value)) return "0";
  if (elem == "i32") return std::to_string(static_cast<int32_t>(value));
  return std::to_string(static_cast<int64_t>(value));
}

const char* emitter_compare_type(const std::string& elem) {
  if (is_float_elem(elem)) return "FLOAT";
  return is_unsigned_elem(elem) ? "UNSIGNED" : "SIGNED";
}

}  // namespace

void HloEmitter::comment(const std::string& text) { body_ += "    // " + text + "\n"; }

std::string HloEmitter::fresh() { return "%" + std::to_string(next_++); }

Val HloEmitter::emit(const std::string& rhs, const Shape& shape, const std::string& elem) {
  Val v{fresh(), shape, elem};
  body_ += "    " + v.name + " = " + rhs + "\n";
  return v;
}

void HloEmitter::raw(const std::string& text) { body_ += text; }

Val HloEmitter::constant(double value, const std::string& elem, const Shape& shape) {
  std::string lit =
      is_float_elem(elem) ? emitter_float_literal(value, elem) : emitter_int_literal(value, elem);
  return emit("stablehlo.constant dense<" + lit + "> : " + tensor_type(shape, elem), shape, elem);
}

Val HloEmitter::int_constant(uint64_t bits, const std::string& elem, const Shape& shape) {
  std::string lit =
      elem[0] == 'u' ? std::to_string(bits) : std::to_string(static_cast<int64_t>(bits));
  return emit("stablehlo.constant dense<" + lit + "> : " + tensor_type(shape, elem), shape, elem);
}

Val HloEmitter::iota(const Shape& shape, int64_t dim, const std::string& elem) {
  return emit("stablehlo.iota dim = " + std::to_string(dim) + " : " + tensor_type(shape, elem),
              shape, elem);
}

Val HloEmitter::unary(const char* op, const Val& x) {
  return emit(std::string(op) + " " + x.name + " : " + tensor_type(x), x.shape, x.elem);
}

Val HloEmitter::binary(const char* op, const Val& a, const Val& b) {
  LOOM_CHECK(a.shape == b.shape && a.elem == b.elem, "[xla] internal: ", op, " of ", tensor_type(a),
             " and ", tensor_type(b));
  return emit(std::string(op) + " " + a.name + ", " + b.name + " : " + tensor_type(a), a.shape,
              a.elem);
}

Val HloEmitter::compare(const char* direction, const Val& a, const Val& b) {
  LOOM_CHECK(a.shape == b.shape && a.elem == b.elem, "[xla] internal: compare of ", tensor_type(a),
             " and ", tensor_type(b));
  return emit(std::string("stablehlo.compare ") + direction + ", " + a.name + ", " + b.name + ", " +
                  emitter_compare_type(a.elem) + " : (" + tensor_type(a) + ", " + tensor_type(b) +
                  ") -> " + tensor_type(a.shape, "i1"),
              a.shape, "i1");
}

Val HloEmitter::select(const Val& cond, const Val& a, const Val& b) {
  LOOM_CHECK(cond.shape == a.shape && a.shape == b.shape && a.elem == b.elem,
             "[xla] internal: select of ", tensor_type(cond), ", ", tensor_type(a), ", ",
             tensor_type(b));
  return emit("stablehlo.select " + cond.name + ", " + a.name + ", " + b.name + " : " +
                  tensor_type(cond) + ", " + tensor_type(a),
              a.shape, a.elem);
}

Val HloEmitter::convert(const Val& x, const std::string& elem) {
  if (x.elem == elem) return x;
  Val v = emit("stablehlo.convert " + x.name + " : (" + tensor_type(x) + ") -> " +
                   tensor_type(x.shape, elem),
               x.shape, elem);
  if (elem == "f32" && (x.elem == "bf16" || x.elem == "f16")) widened_[v.name] = x;
  return v;
}

Val HloEmitter::bitcast(const Val& x, const std::string& elem) {
  return emit("stablehlo.bitcast_convert " + x.name + " : (" + tensor_type(x) + ") -> " +
                  tensor_type(x.shape, elem),
              x.shape, elem);
}

Val HloEmitter::reshape(const Val& x, const Shape& shape) {
  if (x.shape == shape) return x;
  return emit("stablehlo.reshape " + x.name + " : (" + tensor_type(x) + ") -> " +
                  tensor_type(shape, x.elem),
              shape, x.elem);
}

Val HloEmitter::transpose(const Val& x, const std::vector<int64_t>& perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == int64_t(i);
  if (identity) return x;
  Shape out;
  for (int64_t p : perm) out.push_back(x.shape[p]);
  return emit("stablehlo.transpose " + x.name + ", dims = " + int_list(perm) + " : (" +
                  tensor_type(x) + ") -> " + tensor_type(out, x.elem),
              out, x.elem);
}

Val HloEmitter::broadcast_in_dim(const Val& x, const Shape& shape,
                                 const std::vector<int64_t>& dims) {
  return emit("stablehlo.broadcast_in_dim " + x.name + ", dims = " + int_list(dims) + " : (" +
                  tensor_type(x) + ") -> " + tensor_type(shape, x.elem),
              shape, x.elem);
}

Val HloEmitter::broadcast_to(const Val& x, const Shape& shape) {
  if (x.shape == shape) return x;
  std::vector<int64_t> dims;
  size_t off = shape.size() - x.shape.size();
  for (size_t i = 0; i < x.shape.size(); ++i) dims.push_back(static_cast<int64_t>(off + i));
  return broadcast_in_dim(x, shape, dims);
}

Val HloEmitter::slice(const Val& x, const std::vector<int64_t>& start,
                      const std::vector<int64_t>& limit, const std::vector<int64_t>& strides) {
  Shape out;
  for (size_t d = 0; d < start.size(); ++d)
    out.push_back(limit[d] > start[d] ? (limit[d] - start[d] + strides[d] - 1) / strides[d] : 0);
  return emit("\"stablehlo.slice\"(" + x.name + ") {start_indices = " + i64_array(start) +
                  ", limit_indices = " + i64_array(limit) + ", strides = " + i64_array(strides) +
                  "} : (" + tensor_type(x) + ") -> " + tensor_type(out, x.elem),
              out, x.elem);
}

Val HloEmitter::slice_axis(const Val& x, int64_t axis, int64_t start, int64_t size) {
  std::vector<int64_t> s(x.shape.size(), 0), l(x.shape.begin(), x.shape.end()),
      st(x.shape.size(), 1);
  s[axis] = start;
  l[axis] = start + size;
  return slice(x, s, l, st);
}

Val HloEmitter::concatenate(const std::vector<Val>& xs, int64_t axis) {
  if (xs.size() == 1) return xs[0];
  Shape out = xs[0].shape;
  out[axis] = 0;
  std::string names, types;
  for (size_t i = 0; i < xs.size(); ++i) {
    out[axis] += xs[i].shape[axis];
    names += (i ? ", " : "") + xs[i].name;
    types += (i ? ", " : "") + tensor_type(xs[i]);
  }
  return emit("stablehlo.concatenate " + names + ", dim = " + std::to_string(axis) + " : (" +
                  types + ") -> " + tensor_type(out, xs[0].elem),
              out, xs[0].elem);
}

Val HloEmitter::reduce(const Val& x, const Val& init, const std::vector<int64_t>& dims,
                       const char* op) {
  Shape out;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    bool reduced = false;
    for (int64_t r : dims) reduced = reduced || r == int64_t(d);
    if (!reduced) out.push_back(x.shape[d]);
  }
  std::string s = tensor_type({}, x.elem), a = fresh(), b = fresh(), r = fresh();
  std::string region = "({\n    ^bb0(" + a + ": " + s + ", " + b + ": " + s + "):\n      " + r +
                       " = " + op + " " + a + ", " + b + " : " + s + "\n      stablehlo.return " +
                       r + " : " + s + "\n    })";
  return emit("\"stablehlo.reduce\"(" + x.name + ", " + init.name + ") " + region +
                  " {dimensions = " + i64_array(dims) + "} : (" + tensor_type(x) + ", " + s +
                  ") -> " + tensor_type(out, x.elem),
              out, x.elem);
}

Val HloEmitter::dot_general(const Val& a, const Val& b, const std::vector<int64_t>& batch_a,
                            const std::vector<int64_t>& batch_b,
                            const std::vector<int64_t>& contract_a,
                            const std::vector<int64_t>& contract_b, const std::string& elem) {
  if (elem == "f32") {
    auto na = widened_.find(a.name), nb = widened_.find(b.name);
    if (na != widened_.end() && nb != widened_.end() && na->second.elem == nb->second.elem)
      return dot_general(na->second, nb->second, batch_a, batch_b, contract_a, contract_b, elem);
  }
  auto in = [](const std::vector<int64_t>& v, size_t d) {
    for (int64_t x : v)
      if (x == int64_t(d)) return true;
    return false;
  };
  Shape out;
  for (int64_t d : batch_a) out.push_back(a.shape[d]);
  for (size_t d = 0; d < a.shape.size(); ++d)
    if (!in(batch_a, d) && !in(contract_a, d)) out.push_back(a.shape[d]);
  for (size_t d = 0; d < b.shape.size(); ++d)
    if (!in(batch_b, d) && !in(contract_b, d)) out.push_back(b.shape[d]);
  std::string dims;
  if (!batch_a.empty())
    dims += "batching_dims = " + int_list(batch_a) + " x " + int_list(batch_b) + ", ";
  dims += "contracting_dims = " + int_list(contract_a) + " x " + int_list(contract_b);
  return emit("stablehlo.dot_general " + a.name + ", " + b.name + ", " + dims + " : (" +
                  tensor_type(a) + ", " + tensor_type(b) + ") -> " + tensor_type(out, elem),
              out, elem);
}

}  // namespace loom::backends::xla
