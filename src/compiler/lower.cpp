// Lowering an optimized graph into a Program: producer-consumer fusion of
// elementwise instrs of one shape, dropout included (its generator state is
// a group input). A group closes as soon as an instr outside it reads one of
// its values, which keeps the schedule topological. A float sum/mean/max/min
// of a group member over contiguous axes joins the group as its one
// reduction, even once the group is closed (later elementwise members may
// still join, but not ones that read the reduction's result); then liveness
// (the last step reading each value).
#include <algorithm>

#include "compiler/program.h"

namespace loom::compiler {
namespace {
using ops::OpKind;

bool fusible_dtype(DType d) { return is_floating(d) || d == DType::boolean; }

// dropout(x, gen) of a float x: elementwise, its random stream indexed by the
// element (so any chunk of the group can regenerate its part of the mask);
// the int64[2] generator state is a group input the backend reads whole.
bool is_fusible_dropout(const ir::Instr& in, const ir::Graph& g) {
  const ops::TensorType& x = g.type_of(in.operands[0]);
  const ops::TensorType& gen = g.type_of(in.operands[1]);
  return is_floating(in.type.dtype) && in.type.numel() > 0 && is_floating(x.dtype) &&
         x.shape == in.type.shape && gen.dtype == DType::i64 && gen.numel() == 2;
}
}  // namespace

bool is_fusible(const ir::Instr& in, const ir::Graph& g) {
  if (in.op == OpKind::k_dropout) return is_fusible_dropout(in, g);
  uint32_t t = ops::op_traits(in.op);
  if (!(t & (ops::kUnary | ops::kBinary | ops::kTernary))) return false;
  if (in.op == OpKind::k_sign) return false;
  if (!fusible_dtype(in.type.dtype) || in.type.numel() == 0) return false;
  // Operands of another shape broadcast to the output's (infer_type checked
  // it); they can only be group inputs, since every member has the group's shape.
  for (int v : in.operands) {
    const ops::TensorType& ot = g.type_of(v);
    if (!fusible_dtype(ot.dtype) || ot.numel() == 0) return false;
  }
  return true;
}

bool reduce_layout(const Shape& shape, const std::vector<int64_t>& axes, int64_t* outer,
                   int64_t* size, int64_t* inner) {
  int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t ax : axes)
    if (ax >= 0 && ax < rank) reduced[ax] = true;
  *outer = *size = *inner = 1;
  int runs = 0;
  bool prev = false, seen = false;
  for (int64_t d = 0; d < rank; ++d) {
    if (shape[d] == 1) continue;
    if (reduced[d] && !prev) ++runs;
    prev = reduced[d];
    if (reduced[d])
      *size *= shape[d], seen = true;
    else
      (seen ? *inner : *outer) *= shape[d];
  }
  return runs <= 1;
}

namespace {

// Columns of a column reduction (inner > 1) are evaluated kMinFusedInner or
// more at a time; narrower ones would cost more in interpreter overhead
// than the saved memory pass.
constexpr int64_t kMinFusedInner = 64;

bool is_fusible_reduce(const ir::Instr& in, const ir::Graph& g) {
  if (in.op != OpKind::k_sum && in.op != OpKind::k_mean && in.op != OpKind::k_max &&
      in.op != OpKind::k_min)
    return false;
  return in.operands.size() == 1 && is_floating(in.type.dtype) &&
         is_floating(g.type_of(in.operands[0]).dtype);
}

struct Builder {
  const ir::Graph& g;
  Program prog;
  std::vector<int> group_of;      // value -> step index of its open/closed fused group, -1
  std::vector<bool> open;         // per step: group still accepts members
  std::vector<int> step_of;       // value -> step that produces it (-1: graph input)
  std::vector<int> reduce_value;  // per step: value id of its fused reduction, -1

  explicit Builder(const ir::Graph& graph)
      : g(graph), group_of(graph.num_values(), -1), step_of(graph.num_values(), -1) {
    prog.graph = graph;
  }

  void close_groups_read_by(const ir::Instr& in) {
    for (int v : in.operands)
      if (group_of[v] >= 0) open[group_of[v]] = false;
  }

  void add_to_group(int step, int id, const ir::Instr& in) {
    Step& s = prog.steps[step];
    // args hold value ids while building; translate_args() makes them indices.
    s.group.body.push_back(FusedOp{in.op, in.attrs, in.operands, in.type});
    s.group.outputs.push_back(static_cast<int>(s.group.body.size()) - 1);
    s.outputs.push_back(id);  // every member, pruned later
    for (int v : in.operands)
      if (group_of[v] != step && std::find(s.inputs.begin(), s.inputs.end(), v) == s.inputs.end()) {
        s.inputs.push_back(v);
        s.group.input_types.push_back(g.type_of(v));
      }
    group_of[id] = step;
  }

  void translate_args(Step& s) {
    for (FusedOp& op : s.group.body)
      for (int& a : op.args) {
        auto in = std::find(s.inputs.begin(), s.inputs.end(), a);
        if (in != s.inputs.end()) {
          a = static_cast<int>(in - s.inputs.begin());
        } else {
          auto m = std::find(s.outputs.begin(), s.outputs.end(), a);
          a = s.group.num_inputs() + static_cast<int>(m - s.outputs.begin());
        }
      }
  }

  // Attaches reduction `in` (value `id`) to the group that produced its
  // operand, when the reduced axes stream. The group may already be closed
  // (a bias gradient's sum(dy, 0) usually comes after the matmul that also
  // reads dy): the reduction reads only a member, so computing it at the
  // group's step keeps the schedule topological. The group's open state is
  // unchanged; the result is not a member (step_of = s, so pick_group keeps
  // its readers out).
  bool attach_reduce(const ir::Instr& in, int id) {
    if (!is_fusible_reduce(in, g)) return false;
    int v = in.operands[0], s = group_of[v];
    if (s < 0 || prog.steps[s].group.has_reduce) return false;
    FusedReduce r{in.op, in.attrs, v, in.type};
    if (!reduce_layout(g.type_of(v).shape, in.attrs.axes, &r.outer, &r.size, &r.inner))
      return false;
    if (r.size < 2 || (r.inner > 1 && r.inner < kMinFusedInner)) return false;
    prog.steps[s].group.has_reduce = true;
    prog.steps[s].group.reduce = r;
    reduce_value[s] = id;
    step_of[id] = s;
    return true;
  }

  // A group runs at its first member's position, so a new member's other
  // operands must already exist there. An instr reading only graph inputs
  // joins the open group of its shape that is the last step so far (its
  // position is the same as a new group's, so no live range changes): an
  // optimizer's `v * beta2` or `p * decay` then joins the parameter's update
  // instead of starting a group whose results the update must read back.
  int pick_group(const ir::Instr& in) {
    for (int v : in.operands) {
      int s = group_of[v];
      if (s < 0 || !open[s] || prog.steps[s].group.shape != in.type.shape) continue;
      bool ready = true;
      for (int w : in.operands) ready = ready && (group_of[w] == s || step_of[w] < s);
      if (ready) return s;
    }
    const int last = static_cast<int>(prog.steps.size()) - 1;
    if (last < 0 || !open[last] || !prog.steps[last].fused ||
        prog.steps[last].group.shape != in.type.shape)
      return -1;
    for (int w : in.operands)
      if (!g.is_input(w)) return -1;
    return last;
  }

  void build(bool fuse) {
    int first = static_cast<int>(g.inputs.size());
    for (size_t i = 0; i < g.instrs.size(); ++i) {
      const ir::Instr& in = g.instrs[i];
      int id = first + static_cast<int>(i);
      if (fuse && is_fusible(in, g)) {
        int s = pick_group(in);
        if (s < 0) {
          Step step;
          step.fused = true;
          step.group.shape = in.type.shape;
          prog.steps.push_back(step);
          open.push_back(true);
          reduce_value.push_back(-1);
          s = static_cast<int>(prog.steps.size()) - 1;
        }
        add_to_group(s, id, in);
        step_of[id] = s;
        continue;
      }
      if (fuse && attach_reduce(in, id)) continue;
      close_groups_read_by(in);
      Step step;
      step.instr = in;
      step.inputs = in.operands;
      step.outputs = {id};
      prog.steps.push_back(step);
      open.push_back(false);
      reduce_value.push_back(-1);
      step_of[id] = static_cast<int>(prog.steps.size()) - 1;
    }
  }

  // A one-op group writing a graph output of the type of a graph input it
  // reads (a gradient accumulated over micro-batches: grad = grad + new)
  // stays fused: a fused step may write over an operand it reads last, so
  // the memory plan can donate that input's buffer to the output.
  bool updates_input(const Step& s) const {
    if (s.outputs.size() != 1) return false;
    const int out = s.outputs[0];
    if (std::find(g.outputs.begin(), g.outputs.end(), out) == g.outputs.end()) return false;
    for (int v : s.inputs)
      if (g.is_input(v) && g.type_of(v) == g.type_of(out)) return true;
    return false;
  }

  // Drops group outputs nobody outside the group reads; single-op groups
  // become plain op steps (except updates_input ones).
  void prune_outputs() {
    std::vector<bool> needed(g.num_values(), false);
    for (int v : g.outputs) needed[v] = true;
    for (const Step& s : prog.steps)
      for (int v : s.inputs) needed[v] = true;
    for (size_t i = 0; i < prog.steps.size(); ++i) {
      Step& s = prog.steps[i];
      if (!s.fused) continue;
      translate_args(s);
      if (s.group.has_reduce) {  // value id -> body index
        auto m = std::find(s.outputs.begin(), s.outputs.end(), s.group.reduce.arg);
        s.group.reduce.arg = static_cast<int>(m - s.outputs.begin());
      }
      std::vector<int> outs, body_outs;
      for (size_t k = 0; k < s.outputs.size(); ++k)
        if (needed[s.outputs[k]]) {
          outs.push_back(s.outputs[k]);
          body_outs.push_back(s.group.outputs[k]);
        }
      s.outputs = outs;
      s.group.outputs = body_outs;
      if (s.group.has_reduce) {
        s.outputs.push_back(reduce_value[i]);
        ++prog.num_fused_groups;
        continue;
      }
      if (s.group.body.size() == 1 && !s.outputs.empty() && !updates_input(s)) {
        s.fused = false;
        s.instr = g.instr_of(s.outputs[0]);
        s.inputs = s.instr.operands;
      } else {
        ++prog.num_fused_groups;
      }
    }
  }

  void liveness() {
    std::vector<int> last(g.num_values(), -1);
    for (size_t i = 0; i < prog.steps.size(); ++i)
      for (int v : prog.steps[i].inputs) last[v] = static_cast<int>(i);
    for (size_t i = 0; i < prog.steps.size(); ++i)
      for (int v : prog.steps[i].outputs) last[v] = std::max(last[v], static_cast<int>(i));
    std::vector<bool> keep(g.num_values(), false);
    for (int v : g.outputs) keep[v] = true;
    for (int v = 0; v < g.num_values(); ++v)
      if (!keep[v] && last[v] >= 0) prog.steps[last[v]].free_after.push_back(v);
  }
};

}  // namespace

Program lower(const ir::Graph& graph, bool fuse) {
  Builder b(graph);
  b.build(fuse);
  b.prune_outputs();
  b.liveness();
  return std::move(b.prog);
}

bool is_collective_step(const Step& step) {
  return !step.fused && (ops::op_traits(step.instr.op) & ops::kCollective);
}

bool collective_reads_operand_until_wait(const Step& step) {
  return is_collective_step(step) && (step.instr.op == ops::OpKind::k_all_gather ||
                                      step.instr.op == ops::OpKind::k_reduce_scatter);
}

int collective_wait_step(const Program& program, int s, bool result_in_arena) {
  const int n = static_cast<int>(program.steps.size());
  const int v = program.steps[s].outputs[0];
  const bool scatter = program.steps[s].instr.op == ops::OpKind::k_reduce_scatter;
  int later_scatters = 0;
  for (int t = s + 1; t < n; ++t) {
    const Step& step = program.steps[t];
    if (std::find(step.inputs.begin(), step.inputs.end(), v) != step.inputs.end()) return t;
    if (scatter && is_collective_step(step) && step.instr.op == ops::OpKind::k_reduce_scatter &&
        ++later_scatters == kReduceScattersInFlight)
      return t;
  }
  return result_in_arena ? s + 1 : n;
}

}  // namespace loom::compiler
