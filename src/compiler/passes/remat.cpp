// Remat (gradient checkpointing, docs/remat.md; XLA's rematerialization,
// PyTorch's torch.utils.checkpoint): in a training graph traced with
// checkpointed layers (ir::Instr::remat > 0 on each layer call's forward ops,
// -1 on backward ops), the activations a layer call's backward reads are
// recomputed just before that backward instead of being kept from the forward.
//
// Per call r, an op of r is *kept* when an op outside r that is not backward
// reads it (the call's output, which the next layer reads; anything the rest
// of the forward reads), when it is a graph output, or when it is a
// collective; those, and whatever r reads from outside, stay live as before.
// Every other op of r that a backward op reads gets a clone (marked -1),
// built from clones of r's ops back to those kept values, and backward reads
// the clones. The clones are the same ops with the same operands (random ops
// read the same generator state), so they compute the same bits.
//
// Then the schedule: clones, and backward ops that read nothing but forward
// values and each other ("forward-only" backward ops, such as a layer norm's
// normalized input), are emitted just before their first reader; every other
// op keeps its order. So one call's clones are live only during its own
// backward, and the memory plan sees the shorter live ranges.
//
// Assumes dce ran (every instr is live) and the graph is in topological order.
// A graph without marks, or without backward readers of marked ops, is left
// untouched.
#include "compiler/pass.h"

namespace loom::compiler {
namespace {

struct RematGraphInfo {
  std::vector<bool> backward;  // per value: a backward op, or reads one (mark 0)
  std::vector<bool> keep;      // per value of a call: stays as traced
  std::vector<bool> clone;     // per value of a call: backward reads it, not kept
  std::vector<bool> deferred;  // per value: emitted before its first reader
};

RematGraphInfo classify_for_remat(const ir::Graph& g) {
  int first = static_cast<int>(g.inputs.size()), n = g.num_values();
  RematGraphInfo info{std::vector<bool>(n, false), std::vector<bool>(n, false),
                      std::vector<bool>(n, false), std::vector<bool>(n, false)};
  auto mark = [&](int v) { return g.is_input(v) ? 0 : g.instr_of(v).remat; };
  for (int id = first; id < n; ++id) {
    const ir::Instr& in = g.instr_of(id);
    bool reads_backward = false;
    for (int v : in.operands) reads_backward = reads_backward || info.backward[v];
    info.backward[id] = in.remat < 0 || (in.remat == 0 && reads_backward);
  }
  std::vector<bool> read_by_backward(n, false);
  for (int id = first; id < n; ++id) {
    const ir::Instr& in = g.instr_of(id);
    if (ops::has_trait(in.op, ops::kCollective)) info.keep[id] = true;
    for (int v : in.operands) {
      if (mark(v) <= 0) continue;
      if (info.backward[id])
        read_by_backward[v] = true;
      else if (in.remat != mark(v))
        info.keep[v] = true;
    }
  }
  for (int v : g.outputs) info.keep[v] = true;
  for (int v = first; v < n; ++v)
    info.clone[v] = mark(v) > 0 && !info.keep[v] && read_by_backward[v];
  // A backward op is forward-only when it reads a marked value and otherwise only
  // forward values, inputs and forward-only ops: it never waits on a gradient.
  std::vector<bool> forward_only(n, false), reads_call(n, false);
  for (int id = first; id < n; ++id) {
    const ir::Instr& in = g.instr_of(id);
    if (!info.backward[id] || ops::has_trait(in.op, ops::kCollective)) continue;
    bool ok = true, reads = false;
    for (int v : in.operands) {
      reads = reads || mark(v) > 0 || reads_call[v];
      ok = ok && (!info.backward[v] || forward_only[v]);
    }
    forward_only[id] = ok && reads;
    reads_call[id] = reads;
  }
  for (int v = first; v < n; ++v) info.deferred[v] = forward_only[v];
  return info;
}

class Remat final : public Pass {
 public:
  std::string_view name() const override { return "remat"; }

  bool run(ir::Graph& g) override {
    bool marked = false;
    for (const ir::Instr& in : g.instrs) marked = marked || in.remat > 0;
    if (!marked) return false;
    RematGraphInfo info = classify_for_remat(g);
    bool any = false;
    for (bool c : info.clone) any = any || c;
    if (!any) return false;
    build_nodes(g, info);
    emit_schedule(g);
    return true;
  }

 private:
  // Nodes by extended id: graph values first, then the clones.
  std::vector<ir::Instr> nodes_;
  std::vector<bool> deferred_;
  int first_ = 0, originals_ = 0;

  // The extended id of the clone of call value v, made (with its operands'
  // clones) on first request.
  int clone_of(int v, const RematGraphInfo& info, std::vector<int>& clones) {
    if (clones[v] >= 0) return clones[v];
    std::vector<std::pair<int, size_t>> stack{{v, 0}};
    while (!stack.empty()) {
      auto& [u, next] = stack.back();
      const ir::Instr& in = nodes_[u - first_];
      if (next < in.operands.size()) {
        int w = in.operands[next++];
        bool needs = w >= first_ && w < originals_ && !info.keep[w] && in.remat > 0 &&
                     nodes_[w - first_].remat > 0;
        if (needs && clones[w] < 0) stack.push_back({w, 0});
        continue;
      }
      ir::Instr copy = in;
      copy.remat = -1;  // runs in backward; a second run of the pass leaves it alone
      for (int& w : copy.operands)
        if (w >= first_ && w < originals_ && clones[w] >= 0) w = clones[w];
      nodes_.push_back(std::move(copy));
      deferred_.push_back(true);
      clones[u] = first_ + static_cast<int>(nodes_.size()) - 1;
      stack.pop_back();
    }
    return clones[v];
  }

  void build_nodes(const ir::Graph& g, const RematGraphInfo& info) {
    first_ = static_cast<int>(g.inputs.size());
    originals_ = g.num_values();
    nodes_ = g.instrs;
    deferred_.assign(info.deferred.begin() + first_, info.deferred.end());
    std::vector<int> clones(g.num_values(), -1);
    for (int id = first_; id < originals_; ++id) {
      if (!info.backward[id]) continue;
      for (size_t k = 0; k < nodes_[id - first_].operands.size(); ++k) {
        int v = nodes_[id - first_].operands[k];
        if (info.clone[v]) {
          int c = clone_of(v, info, clones);
          nodes_[id - first_].operands[k] = c;
        }
      }
    }
  }

  // Emits every node once, operands first: non-deferred originals in their
  // order, each deferred node just before its first reader.
  void emit_schedule(ir::Graph& g) {
    int total = first_ + static_cast<int>(nodes_.size());
    std::vector<int> new_id(total, -1);
    for (int v = 0; v < first_; ++v) new_id[v] = v;
    std::vector<ir::Instr> out;
    out.reserve(nodes_.size());
    auto emit = [&](int root) {
      std::vector<std::pair<int, size_t>> stack{{root, 0}};
      while (!stack.empty()) {
        auto& [u, next] = stack.back();
        const ir::Instr& in = nodes_[u - first_];
        if (next < in.operands.size()) {
          int w = in.operands[next++];
          if (new_id[w] < 0) stack.push_back({w, 0});
          continue;
        }
        ir::Instr copy = in;
        for (int& w : copy.operands) w = new_id[w];
        out.push_back(std::move(copy));
        new_id[u] = first_ + static_cast<int>(out.size()) - 1;
        stack.pop_back();
      }
    };
    for (int id = first_; id < originals_; ++id)
      if (!deferred_[id - first_] && new_id[id] < 0) emit(id);
    for (int id = first_; id < total; ++id)
      if (new_id[id] < 0) emit(id);
    g.instrs = std::move(out);
    for (int& v : g.outputs) v = new_id[v];
  }
};

}  // namespace

std::unique_ptr<Pass> make_remat() { return std::make_unique<Remat>(); }

}  // namespace loom::compiler
