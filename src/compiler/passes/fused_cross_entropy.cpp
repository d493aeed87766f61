// Fused cross-entropy: finds a language-model head and its loss in a
// training graph,
//   Z  = matmul(H, W, trans_b)           H [..., D], W [C, D]  (logits [..., C])
//   L  = cross_entropy(reshape(Z), t)    [N, C] with N = numel(H) / D
//   dZ = cross_entropy_backward(reshape(Z), t, g)
//   dH = matmul(reshape(dZ), W)           dW = sum_to(matmul(reshape(dZ), H, trans_a))
// and rewrites it into one fused_linear_cross_entropy(H [N, D], W, t, g),
// whose kernel computes loss, dH and dW in chunks of rows and never
// materializes the [N, C] logits or their gradient (the idea of Liger-Kernel's
// fused linear cross-entropy and of "Cut Your Losses in Large-Vocabulary
// Language Models", Wijmans et al. 2024). L, dH and dW are then slices of its
// [C + N + 1, D] result.
//
// With autocast the head is cast(matmul(bf16 H, bf16 W), f32) and the
// gradient is cast back to bf16 before the two matmuls; the fused op then
// takes the bf16 operands and the slices are cast back to the replaced
// values' dtypes.
//
// Applies when: H and W are both f32 or both bf16 and the loss is f32;
// C >= the class threshold (default 1024,
// LOOM_FUSED_CE_MIN_CLASSES overrides); the logits and their gradient have
// no user outside the pattern and are not graph outputs; the backward is in
// the graph (a forward-only graph is left alone); g does not depend on L;
// and the backend supports the fused op. A dH or dW nobody uses is simply
// not read. New instrs are scheduled by a stable topological sort that keeps
// every other instr in its original order.
#include <cstdlib>
#include <queue>
#include <string>

#include "compiler/pass.h"
#include "core/settings.h"
#include "loom/error.h"
#include "ops/infer.h"

namespace loom::compiler {
namespace {

using ops::OpKind;

struct Users {
  std::vector<std::vector<int>> of;  // value -> instr values that read it
  std::vector<bool> output;
};

// Readers of each value among the live instrs (dead code, which DCE drops
// later, is ignored: a dead backward is no backward).
Users users_of(const ir::Graph& g) {
  Users u{std::vector<std::vector<int>>(g.num_values()), std::vector<bool>(g.num_values(), false)};
  int first = static_cast<int>(g.inputs.size());
  std::vector<bool> live(g.num_values(), false);
  for (int v : g.outputs) u.output[v] = live[v] = true;
  for (int i = static_cast<int>(g.instrs.size()) - 1; i >= 0; --i)
    if (live[first + i])
      for (int v : g.instrs[i].operands) live[v] = true;
  for (size_t i = 0; i < g.instrs.size(); ++i)
    if (live[first + i])
      for (int v : g.instrs[i].operands) u.of[v].push_back(first + static_cast<int>(i));
  return u;
}

// One recognized head: the values to read and the values to replace.
struct Match {
  int h = -1, w = -1, target = -1, grad = -1;  // fused op operands (h maybe not 2-D)
  int loss = -1;                               // the cross_entropy value
  int dh = -1, dw = -1;                        // values replaced by the slices (-1: unused)
  ops::Attrs attrs;
};

class Matcher {
 public:
  Matcher(const ir::Graph& g, int64_t min_classes)
      : g_(g), u_(users_of(g)), min_classes_(min_classes) {}

  bool match(int ce, Match& m) const {
    const ir::Instr& in = g_.instr_of(ce);
    if (in.op != OpKind::k_cross_entropy || in.type.dtype != DType::f32) return false;
    int z2 = in.operands[0];
    int z = peel_reshapes(z2);
    if (g_.is_input(z)) return false;
    if (g_.instr_of(z).op == OpKind::k_cast) z = g_.instr_of(z).operands[0];  // autocast
    if (g_.is_input(z)) return false;
    const ir::Instr& mm = g_.instr_of(z);
    if (mm.op != OpKind::k_matmul || mm.attrs.trans_a || !mm.attrs.trans_b) return false;
    int h = mm.operands[0], w = mm.operands[1];
    const ops::TensorType &ht = g_.type_of(h), &wt = g_.type_of(w);
    bool dtype_ok = (ht.dtype == DType::f32 || ht.dtype == DType::bf16) && wt.dtype == ht.dtype;
    if (!dtype_ok || wt.shape.size() != 2 || ht.shape.size() < 2 || wt.shape[0] < min_classes_)
      return false;
    // Every reader of the logits chain is the loss or its backward.
    int bw = -1;
    if (!only_reshape_chain(z, z2)) return false;
    for (int user : u_.of[z2]) {
      const ir::Instr& ui = g_.instr_of(user);
      if (user == ce) continue;
      if (ui.op != OpKind::k_cross_entropy_backward || ui.operands[1] != in.operands[1] ||
          !(ui.attrs == in.attrs) || bw >= 0)
        return false;
      bw = user;
    }
    if (bw < 0 || u_.output[z2] || depends_on(g_.instr_of(bw).operands[2], ce)) return false;
    m = {h, w, in.operands[1], g_.instr_of(bw).operands[2], ce, -1, -1, in.attrs};
    return match_grad_users(bw, z, m);
  }

 private:
  int peel_reshapes(int v) const {
    while (!g_.is_input(v) && g_.instr_of(v).op == OpKind::k_reshape)
      v = g_.instr_of(v).operands[0];
    return v;
  }
  // The values from `top` down to `bottom` (reshapes, one cast) have one
  // user each and are not outputs.
  bool only_reshape_chain(int top, int bottom) const {
    for (int v = bottom; v != top; v = g_.instr_of(v).operands[0])
      if (u_.output[g_.instr_of(v).operands[0]] || u_.of[g_.instr_of(v).operands[0]].size() != 1)
        return false;
    return true;
  }
  bool depends_on(int v, int target) const {
    std::vector<bool> seen(g_.num_values(), false);
    std::vector<int> stack{v};
    while (!stack.empty()) {
      int x = stack.back();
      stack.pop_back();
      if (x == target) return true;
      if (seen[x] || g_.is_input(x)) continue;
      seen[x] = true;
      for (int o : g_.instr_of(x).operands) stack.push_back(o);
    }
    return false;
  }
  // Follows dZ through reshapes to the logits' shape, then accepts only the
  // two matmul gradients; fills m.dh and m.dw.
  bool match_grad_users(int bw, int z, Match& m) const {
    const ops::TensorType& ztype = g_.type_of(z);
    int dz = bw;
    while (!(g_.type_of(dz) == ztype)) {
      if (u_.output[dz] || u_.of[dz].size() != 1) return false;
      int next = u_.of[dz][0];
      OpKind op = g_.instr_of(next).op;
      if (op != OpKind::k_reshape && op != OpKind::k_cast) return false;
      dz = next;
    }
    if (u_.output[dz]) return false;
    for (int user : u_.of[dz]) {
      const ir::Instr& ui = g_.instr_of(user);
      if (ui.op != OpKind::k_matmul || ui.operands[0] != dz) return false;
      bool is_dh = !ui.attrs.trans_a && !ui.attrs.trans_b && ui.operands[1] == m.w;
      bool is_dw = ui.attrs.trans_a && !ui.attrs.trans_b && ui.operands[1] == m.h;
      if (is_dh && m.dh < 0) {
        m.dh = user;
      } else if (is_dw && m.dw < 0) {
        m.dw = summed_to(user, g_.type_of(m.w).shape);
        if (m.dw < 0) return false;
      } else {
        return false;
      }
    }
    return true;
  }
  // The value equal to the [C, D] weight gradient: v itself, or the end of a
  // single-user chain of sums over leading axes and reshapes; -1 if none.
  int summed_to(int v, const Shape& shape) const {
    while (g_.type_of(v).shape != shape) {
      if (u_.output[v] || u_.of[v].size() != 1) return -1;
      int next = u_.of[v][0];
      const ir::Instr& ni = g_.instr_of(next);
      bool leading_sum = ni.op == OpKind::k_sum && !ni.attrs.axes.empty();
      for (int64_t a : ni.attrs.axes)
        leading_sum = leading_sum && a < static_cast<int64_t>(g_.type_of(v).shape.size()) - 2;
      if (!leading_sum && ni.op != OpKind::k_reshape) return -1;
      v = next;
    }
    return v;
  }

  const ir::Graph& g_;
  Users u_;
  int64_t min_classes_;
};

// A graph under reconstruction: original instrs plus appended new ones, each
// with a priority (its position) for the stable topological sort.
struct Rebuild {
  ir::Graph& g;
  std::vector<double> priority;  // per instr

  int add(OpKind op, std::vector<int> operands, const ops::Attrs& attrs, double prio) {
    std::vector<ops::TensorType> types;
    for (int v : operands) types.push_back(g.type_of(v));
    ops::TensorType t = ops::infer_type(op, types, attrs);
    g.instrs.push_back({op, attrs, std::move(operands), std::move(t)});
    priority.push_back(prio);
    return g.num_values() - 1;
  }
  int slice(int v, int64_t axis, int64_t start, int64_t end, double prio) {
    ops::Attrs a;
    a.axis = axis;
    a.start = start;
    a.stop = end;
    return add(OpKind::k_slice, {v}, a, prio);
  }
  int cast(int v, DType dtype, double prio) {
    if (g.type_of(v).dtype == dtype) return v;
    ops::Attrs a;
    a.dtype = dtype;
    return add(OpKind::k_cast, {v}, a, prio);
  }
  int reshape(int v, const Shape& shape, double prio) {
    if (g.type_of(v).shape == shape) return v;
    ops::Attrs a;
    a.shape = shape;
    return add(OpKind::k_reshape, {v}, a, prio);
  }
};

// Sorts g's instrs topologically, taking ready instrs by lowest priority,
// and renumbers every value; replace[v] redirects uses of v first.
void reschedule(ir::Graph& g, const std::vector<double>& priority, std::vector<int> replace) {
  int first = static_cast<int>(g.inputs.size()), n = static_cast<int>(g.instrs.size());
  auto resolve = [&](int v) {
    while (replace[v] != v) v = replace[v];
    return v;
  };
  for (ir::Instr& in : g.instrs)
    for (int& v : in.operands) v = resolve(v);
  for (int& v : g.outputs) v = resolve(v);
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> readers(n);
  for (int i = 0; i < n; ++i)
    for (int v : g.instrs[i].operands)
      if (v >= first) ++pending[i], readers[v - first].push_back(i);
  using Item = std::pair<double, int>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ready;
  for (int i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push({priority[i], i});
  std::vector<int> renumber(g.num_values());
  for (int v = 0; v < first; ++v) renumber[v] = v;
  std::vector<ir::Instr> out;
  while (!ready.empty()) {
    int i = ready.top().second;
    ready.pop();
    renumber[first + i] = first + static_cast<int>(out.size());
    out.push_back(std::move(g.instrs[i]));
    for (int r : readers[i])
      if (--pending[r] == 0) ready.push({priority[r], r});
  }
  LOOM_CHECK(static_cast<int>(out.size()) == n, "[fused_cross_entropy] cycle while rescheduling");
  for (ir::Instr& in : out)
    for (int& v : in.operands) v = renumber[v];
  for (int& v : g.outputs) v = renumber[v];
  g.instrs = std::move(out);
}

int64_t min_classes_from_env() { return settings::integer(Setting::fused_ce_min_classes); }

class FusedCrossEntropy final : public Pass {
 public:
  FusedCrossEntropy(std::function<bool(OpKind)> supported, int64_t min_classes)
      : supported_(std::move(supported)), min_classes_(min_classes) {}
  std::string_view name() const override { return "fused_cross_entropy"; }

  bool run(ir::Graph& g) override {
    if (!supported_(OpKind::k_fused_linear_cross_entropy)) return false;
    std::vector<Match> found;
    {
      Matcher matcher(g, min_classes_);
      int first = static_cast<int>(g.inputs.size());
      for (size_t i = 0; i < g.instrs.size(); ++i) {
        Match m;
        if (matcher.match(first + static_cast<int>(i), m)) found.push_back(m);
      }
    }
    if (found.empty()) return false;
    Rebuild rb{g, {}};
    for (size_t i = 0; i < g.instrs.size(); ++i) rb.priority.push_back(double(i));
    std::vector<std::pair<int, int>> redirect;  // (old value, new value)
    for (const Match& m : found) rewrite(rb, m, redirect);
    std::vector<int> replace(g.num_values());
    for (size_t v = 0; v < replace.size(); ++v) replace[v] = static_cast<int>(v);
    for (auto [from, to] : redirect) replace[from] = to;
    reschedule(g, rb.priority, std::move(replace));
    return true;
  }

 private:
  static void rewrite(Rebuild& rb, const Match& m, std::vector<std::pair<int, int>>& redirect) {
    ir::Graph& g = rb.g;
    int first = static_cast<int>(g.inputs.size());
    // Just after the last operand is defined (g comes late, in the backward).
    double at = 0;
    for (int v : {m.h, m.w, m.target, m.grad})
      if (v >= first) at = std::max(at, rb.priority[v - first] + 0.5);
    const Shape& hs = g.type_of(m.h).shape;
    int64_t d = hs.back(), n = numel(hs) / d, c = g.type_of(m.w).shape[0];
    int h2 = rb.reshape(m.h, {n, d}, at);
    int fused =
        rb.add(OpKind::k_fused_linear_cross_entropy, {h2, m.w, m.target, m.grad}, m.attrs, at);
    // It computes the head's gradients: a backward op for remat.cpp when they were.
    for (int v : {m.dh, m.dw})
      if (v >= first && g.instr_of(v).remat < 0) g.instrs[fused - first].remat = -1;
    int loss_row = rb.slice(rb.slice(fused, 0, c + n, c + n + 1, at), 1, 0, 1, at);
    redirect.push_back({m.loss, rb.reshape(loss_row, {}, at)});
    if (m.dh >= 0) {
      ops::TensorType t = g.type_of(m.dh);
      int dh = rb.reshape(rb.slice(fused, 0, c, c + n, at), t.shape, at);
      redirect.push_back({m.dh, rb.cast(dh, t.dtype, at)});
    }
    if (m.dw >= 0) {
      DType dtype = g.type_of(m.dw).dtype;
      redirect.push_back({m.dw, rb.cast(rb.slice(fused, 0, 0, c, at), dtype, at)});
    }
  }

  std::function<bool(OpKind)> supported_;
  int64_t min_classes_;
};

}  // namespace

std::unique_ptr<Pass> make_fused_cross_entropy(std::function<bool(ops::OpKind)> supported,
                                               int64_t min_classes) {
  return std::make_unique<FusedCrossEntropy>(
      std::move(supported), min_classes > 0 ? min_classes : min_classes_from_env());
}

}  // namespace loom::compiler
