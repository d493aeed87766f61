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
// Then the schedule. Backward ops on the gradient chain (reading the head's
// forward values, such as the loss's backward, or another chain op) run as
// soon as their chain operands exist, so a layer's weight gradients are taken
// right after its output gradient; clones and the other backward ops (a
// layer norm's recomputed statistics, a weight's transpose) are emitted just
// before their first reader; forward and optimizer ops keep their order. So
// one call's clones are live only during its own backward, and the memory
// plan sees the shorter live ranges.
//
// Assumes dce ran (every instr is live) and the graph is in topological order.
// A graph without marks, or without backward readers of marked ops, is left
// untouched.
#include <queue>

#include "compiler/pass.h"

namespace loom::compiler {
namespace {

struct RematGraphInfo {
  std::vector<bool> backward;  // per value: a backward op, or reads one (mark 0)
  std::vector<bool> keep;      // per value of a call: stays as traced
  std::vector<bool> clone;     // per value of a call: backward reads it, not kept
  std::vector<bool> deferred;  // per value: emitted just before its first reader
  std::vector<bool> asap;      // per value: emitted once its other operands are
};

RematGraphInfo classify_for_remat(const ir::Graph& g) {
  int first = static_cast<int>(g.inputs.size()), n = g.num_values();
  RematGraphInfo info{std::vector<bool>(n, false), std::vector<bool>(n, false),
                      std::vector<bool>(n, false), std::vector<bool>(n, false),
                      std::vector<bool>(n, false)};
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
  // The gradient chain: backward ops (traced by backward()) reading the head's
  // forward values (downstream of the calls: logits, the last hidden state) or
  // another chain op. They run as soon as their chain operands exist; every
  // other backward op (a layer norm's recomputed statistics, a weight's
  // transpose) waits until its first reader.
  std::vector<bool> after_calls(n, false), chain(n, false);
  for (int id = first; id < n; ++id) {
    const ir::Instr& in = g.instr_of(id);
    bool after = in.remat > 0, on_chain = false;
    for (int v : in.operands) {
      after = after || after_calls[v];
      on_chain = on_chain || chain[v] || (mark(v) == 0 && !g.is_input(v) && after_calls[v]);
    }
    after_calls[id] = !info.backward[id] && after;
    chain[id] = info.backward[id] && on_chain;
    if (in.remat < 0 && !ops::has_trait(in.op, ops::kCollective)) {
      info.asap[id] = chain[id];
      info.deferred[id] = !chain[id];
    }
  }
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
    emit_schedule(g, info);
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

  // Emits every node once, operands first: the other originals in their
  // order, a gradient-chain op as soon as its chain operands are emitted
  // (lowest original position first), a deferred node just before its first
  // reader.
  void emit_schedule(ir::Graph& g, const RematGraphInfo& info) {
    int total = first_ + static_cast<int>(nodes_.size());
    std::vector<int> new_id(total, -1), pending(total, 0);
    std::vector<std::vector<int>> asap_readers(total);
    for (int v = 0; v < first_; ++v) new_id[v] = v;
    for (int id = first_; id < originals_; ++id) {
      if (!info.asap[id]) continue;
      for (int w : nodes_[id - first_].operands)
        if (w >= first_ && !deferred_[w - first_]) ++pending[id], asap_readers[w].push_back(id);
    }
    std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
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
        for (int r : asap_readers[u])
          if (--pending[r] == 0) ready.push(r);
        stack.pop_back();
      }
    };
    auto drain = [&] {
      while (!ready.empty()) {
        int r = ready.top();
        ready.pop();
        if (new_id[r] < 0) emit(r);
      }
    };
    for (int id = first_; id < originals_; ++id) {
      if (deferred_[id - first_] || info.asap[id] || new_id[id] >= 0) continue;
      emit(id);
      drain();
    }
    for (int id = first_; id < total; ++id) {
      if (new_id[id] < 0) emit(id);
      drain();
    }
    g.instrs = std::move(out);
    for (int& v : g.outputs) v = new_id[v];
  }
};

}  // namespace

std::unique_ptr<Pass> make_remat() { return std::make_unique<Remat>(); }

}  // namespace loom::compiler
