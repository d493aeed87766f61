// collective_schedule: orders a step graph so that each collective
// (ops.def's kCollective: all_reduce) comes as early as its operands allow,
// and what reads its result as late as the graph allows, so that an
// executable which starts a collective at its step and waits for it at its
// first reader (backends/executable.cpp) overlaps the reduction with the
// compute in between — torch DDP's bucket all-reduce during backward.
//
// The graph's order is the post-order of the live tensors (lazy/collect.cpp),
// which need not follow backward: the first all_reduce met can be the bucket
// of the tied embedding, whose gradient is the last one backward finishes.
// So the collectives are taken by readiness: the one with the fewest
// ancestor instrs first (the last layers' bucket, whose gradients need the
// least of backward), ties by graph order. Then every instr gets the group
// of the first collective (in that order) that needs it, or "after all of
// them"; a stable topological sort takes ready instrs by (group, graph
// position). So each collective directly follows the last instr it needs
// beyond the earlier ones, and its readers (slices back into .grad, the
// gradient norm, the optimizer) run after every collective was started.
// Assumes every rank compiles the same graph (every rank traces the same
// step): the order is a function of the graph only, so all ranks issue
// their collectives in the same order, as MPI requires. Graphs without
// collectives are left as they are.
#include <algorithm>

#include "compiler/pass.h"
#include "loom/error.h"

namespace loom::compiler {
namespace {

bool is_collective_instr(const ir::Instr& in) {
  return (ops::op_traits(in.op) & ops::kCollective) != 0;
}

// Instr indices of the ancestors of instr `root` (itself included) not yet
// marked in `mark`; marks them with `stamp`. Iterative DFS over operands.
int64_t mark_ancestors(const ir::Graph& g, int root, int stamp, std::vector<int>& mark) {
  const int first = static_cast<int>(g.inputs.size());
  if (mark[root] >= 0) return 0;  // needed by an earlier collective already
  int64_t count = 0;
  std::vector<int> stack{root};
  mark[root] = stamp;
  while (!stack.empty()) {
    const int i = stack.back();
    stack.pop_back();
    ++count;
    for (int v : g.instrs[i].operands) {
      if (v < first || mark[v - first] >= 0) continue;
      mark[v - first] = stamp;
      stack.push_back(v - first);
    }
  }
  return count;
}

// Collective instr indices by readiness: fewest ancestors first, then graph order.
std::vector<int> collectives_by_readiness(const ir::Graph& g) {
  const int n = static_cast<int>(g.instrs.size());
  std::vector<std::pair<int64_t, int>> keyed;
  std::vector<int> mark(n, -1);
  for (int i = 0; i < n; ++i) {
    if (!is_collective_instr(g.instrs[i])) continue;
    std::fill(mark.begin(), mark.end(), -1);
    keyed.push_back({mark_ancestors(g, i, 0, mark), i});
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<int> order;
  for (const auto& k : keyed) order.push_back(k.second);
  return order;
}

class CollectiveSchedule final : public Pass {
 public:
  std::string_view name() const override { return "collective_schedule"; }

  bool run(ir::Graph& g) override {
    const std::vector<int> collectives = collectives_by_readiness(g);
    if (collectives.empty()) return false;
    const int n = static_cast<int>(g.instrs.size());
    const auto m = static_cast<int>(collectives.size());
    // group[i]: the first collective (in readiness order) needing instr i, else m.
    std::vector<int> group(n, -1);
    for (int k = 0; k < m; ++k) mark_ancestors(g, collectives[k], k, group);
    std::vector<int64_t> priority(n);
    for (int i = 0; i < n; ++i) {
      const int64_t grp = group[i] < 0 ? m : group[i];
      priority[i] = grp * (static_cast<int64_t>(n) + 1) + i;
    }
    return reorder_by_priority(g, priority);
  }
};

}  // namespace

std::unique_ptr<Pass> make_collective_schedule() { return std::make_unique<CollectiveSchedule>(); }

}  // namespace loom::compiler
