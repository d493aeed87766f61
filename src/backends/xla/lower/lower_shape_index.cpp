// Lowering of the data-movement ops (reshape, permute, expand, slice, concat)
// and the index ops (embedding, index_select, gather, index_add, index_copy,
// scatter_add, one_hot) to StableHLO, with torch's semantics as the
// reference implements them (backends/reference/shape.cpp, index.cpp).
// embedding and index_select are row gathers; torch.gather / scatter_add
// index every element, so they gather / scatter with full coordinates (iota
// on every dim but `axis`, the index operand on it); index_copy is a
// scatter whose update replaces the element. Sums inside index_add /
// scatter_add run in f32 for bf16/f16 (i32 for bool) and round once.
// Unlike the reference, an out-of-range index does not throw: XLA clamps a
// gather's start and drops a scatter's update (StableHLO spec, gather /
// scatter).
#include "backends/xla/lower/lower_ops.h"
#include "loom/error.h"

namespace loom::backends::xla {

using ops::OpKind;

namespace {

std::vector<int64_t> index_iota_list(int64_t n, int64_t skip = -1) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i)
    if (i != skip) v.push_back(i);
  return v;
}

std::string index_work_elem(const std::string& elem) {
  return is_float_elem(elem) ? "f32" : elem == "i1" ? "i32" : elem;
}

// [I..., rank] coordinates: coordinate `axis` from `index` (shape I), the
// others the element's own position.
Val index_full_coordinates(HloEmitter& e, const Val& index, int64_t axis) {
  Shape col = index.shape;
  col.push_back(1);
  std::vector<Val> parts;
  for (int64_t d = 0; d < int64_t(index.shape.size()); ++d)
    parts.push_back(d == axis ? e.reshape(cast_to(e, index, "i64"), col) : e.iota(col, d, "i64"));
  return e.concatenate(parts, static_cast<int64_t>(index.shape.size()));
}

std::string index_gather_text(const Val& x, const Val& idx, const std::vector<int64_t>& offset_dims,
                              const std::vector<int64_t>& collapsed,
                              const std::vector<int64_t>& start_map, int64_t index_vector_dim,
                              const std::vector<int64_t>& slice_sizes, const Shape& out) {
  return "\"stablehlo.gather\"(" + x.name + ", " + idx.name +
         ") {dimension_numbers = #stablehlo.gather<offset_dims = " + int_list(offset_dims) +
         ", collapsed_slice_dims = " + int_list(collapsed) +
         ", start_index_map = " + int_list(start_map) +
         ", index_vector_dim = " + std::to_string(index_vector_dim) +
         ">, indices_are_sorted = false, slice_sizes = " + i64_array(slice_sizes) + "} : (" +
         tensor_type(x) + ", " + tensor_type(idx) + ") -> " + tensor_type(out, x.elem);
}

// scatter of `src` into `base` (same element type) at `idx`: the sum of
// the two (add) or the update alone (!add: index_copy's overwrite).
Val index_scatter(HloEmitter& e, const Val& base, const Val& idx, const Val& src,
                  const std::vector<int64_t>& window, const std::vector<int64_t>& inserted,
                  const std::vector<int64_t>& to_operand, int64_t index_vector_dim, bool add) {
  std::string s = tensor_type({}, base.elem), a = e.fresh(), b = e.fresh(), r = e.fresh();
  std::string body = add ? r + " = stablehlo.add " + a + ", " + b + " : " + s +
                               "\n      stablehlo.return " + r + " : " + s
                         : "stablehlo.return " + b + " : " + s;
  std::string region =
      "({\n    ^bb0(" + a + ": " + s + ", " + b + ": " + s + "):\n      " + body + "\n    })";
  return e.emit("\"stablehlo.scatter\"(" + base.name + ", " + idx.name + ", " + src.name + ") " +
                    region + " {indices_are_sorted = false, scatter_dimension_numbers = " +
                    "#stablehlo.scatter<update_window_dims = " + int_list(window) +
                    ", inserted_window_dims = " + int_list(inserted) +
                    ", scatter_dims_to_operand_dims = " + int_list(to_operand) +
                    ", index_vector_dim = " + std::to_string(index_vector_dim) +
                    ">, unique_indices = false} : (" + tensor_type(base) + ", " + tensor_type(idx) +
                    ", " + tensor_type(src) + ") -> " + tensor_type(base),
                base.shape, base.elem);
}

Val index_lower_slice(HloEmitter& e, const ir::Instr& in, const Val& x) {
  const ops::Attrs& a = in.attrs;
  int64_t size = in.type.shape[a.axis];
  std::vector<int64_t> start(x.shape.size(), 0), limit(x.shape.begin(), x.shape.end()),
      strides(x.shape.size(), 1);
  start[a.axis] = a.start;
  limit[a.axis] = size > 0 ? a.start + (size - 1) * a.step + 1 : a.start;
  strides[a.axis] = a.step;
  return e.slice(x, start, limit, strides);
}

}  // namespace

Val lower_shape(HloEmitter& e, const ir::Instr& in, const std::vector<Val>& args) {
  const Val& x = args[0];
  switch (in.op) {
    case OpKind::k_reshape:
      return e.reshape(x, in.type.shape);
    case OpKind::k_permute:
      return e.transpose(x, in.attrs.perm);
    case OpKind::k_expand:
      return e.broadcast_to(x, in.type.shape);
    case OpKind::k_slice:
      return index_lower_slice(e, in, x);
    case OpKind::k_concat: {
      std::vector<Val> parts;
      for (const Val& v : args)
        if (v.shape[in.attrs.axis] > 0) parts.push_back(v);
      if (parts.empty()) return e.constant(0, x.elem, in.type.shape);
      return e.concatenate(parts, in.attrs.axis);
    }
    default:
      fail("[xla] cannot lower ", ops::op_name(in.op), " (not a shape op)");
  }
}

Val lower_index(HloEmitter& e, const ir::Instr& in, const std::vector<Val>& args) {
  const Val& x = args[0];
  const Shape& out = in.type.shape;
  int64_t axis = in.attrs.axis, rank = static_cast<int64_t>(x.shape.size());
  switch (in.op) {
    case OpKind::k_embedding: {  // rows of weight [V, D] at ids [...]
      const Val& ids = args[1];
      int64_t r = static_cast<int64_t>(ids.shape.size());
      return e.emit(index_gather_text(x, ids, {r}, {0}, {0}, r, {1, x.shape[1]}, out), out, x.elem);
    }
    case OpKind::k_index_select: {  // x's slices at index [n] along axis
      Val idx = e.reshape(args[1], {args[1].shape[0], 1});
      Shape sizes = x.shape;
      sizes[axis] = 1;
      return e.emit(
          index_gather_text(x, idx, index_iota_list(rank, axis), {axis}, {axis}, 1, sizes, out),
          out, x.elem);
    }
    case OpKind::k_gather: {  // out[i...] = x[i... with i_axis = index[i...]]
      Val coords = index_full_coordinates(e, args[1], axis);
      std::vector<int64_t> all = index_iota_list(rank), ones(rank, 1);
      return e.emit(index_gather_text(x, coords, {}, all, all, rank, ones, out), out, x.elem);
    }
    case OpKind::k_scatter_add: {
      std::string work = index_work_elem(x.elem);
      Val coords = index_full_coordinates(e, args[1], axis);
      std::vector<int64_t> all = index_iota_list(rank);
      Val r = index_scatter(e, cast_to(e, x, work), coords, cast_to(e, args[2], work), {}, all, all,
                            rank, true);
      return cast_to(e, r, x.elem);
    }
    case OpKind::k_index_add: {  // base[.., index[k], ..] += src[.., k, ..] along axis
      std::string work = index_work_elem(x.elem);
      Val idx = e.reshape(cast_to(e, args[1], "i64"), {args[1].shape[0], 1});
      Val r = index_scatter(e, cast_to(e, x, work), idx, cast_to(e, args[2], work),
                            index_iota_list(rank, axis), {axis}, {axis}, 1, true);
      return cast_to(e, r, x.elem);
    }
    case OpKind::k_index_copy: {  // self[.., index[k], ..] = source[.., k, ..] along axis
      // No arithmetic: the elements move in their own type. With the
      // output aliased to a donated self (the default), XLA updates the
      // rows in place.
      Val idx = e.reshape(cast_to(e, args[1], "i64"), {args[1].shape[0], 1});
      return index_scatter(e, x, idx, args[2], index_iota_list(rank, axis), {axis}, {axis}, 1,
                           false);
    }
    case OpKind::k_one_hot: {  // out[..., c] = (index[...] == c)
      Val idx = cast_to(e, x, "i64");
      Val wide = e.broadcast_in_dim(idx, out, index_iota_list(rank));
      Val classes = e.iota(out, rank, "i64");
      return cast_to(e, e.compare("EQ", wide, classes), "i64");
    }
    default:
      fail("[xla] cannot lower ", ops::op_name(in.op), " (not an index op)");
  }
}

}  // namespace loom::backends::xla
