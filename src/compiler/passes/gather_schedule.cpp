// gather_schedule: ZeRO-3's per-layer parameter gathers inside one traced
// step (torch FSDP FULL_SHARD's reshard-after-forward and prefetch; Rajbhandari
// et al., "ZeRO", SC 2020, stage 3). In a full_shard step every parameter is
// an all_gather of its shard (a graph input) followed by slices, reshapes,
// casts and transposes. collective_schedule starts every such gather at the
// top of the graph, and the memory plan keeps a gathered value live until its
// last reader in backward: the whole model gathered at once. This pass, after
// collective_schedule:
//
// 1. Families. Each all_gather of a graph input, with the shape and unary ops
//    computed from it alone (the gathered parameters and their views), is a
//    family; the ops outside it that read it are its readers.
// 2. Regather. A family's readers are cut into clusters where, between two
//    consecutive readers, the whole span of another family's readers lies (a
//    layer's forward and its backward have the later layers between them;
//    the uses inside one layer have none). Each cluster after the first gets
//    a clone of the family (the same all_gather of the same shard, the same
//    views: the same bits), so each gathered copy lives only for its cluster.
// 3. Placement. Each family instance's ops go just before their first reader;
//    its all_gather starts kPrefetch instances earlier (just before the first
//    reader of the instance kPrefetch places before it in reader order), so
//    it overlaps that compute (the executable waits at the first reader).
//
// LOOM_GATHER_SCHEDULE=0 turns the pass off (the whole-step gathers, for
// comparison: bench/fsdp_step.sh). Deterministic in the graph alone, so every rank issues the same
// gathers in the same order. Graphs without an all_gather of an input are unchanged. Assumes the
// graph is topologically ordered and dce ran; runs dce itself for the members a regather leaves
// unread.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <queue>

#include "compiler/pass.h"
#include "core/settings.h"

namespace loom::compiler {
namespace {

// Instances ahead of their first use that a gather starts: 2 covers the two
// segments (weight-decay groups) of one decoder layer.
constexpr int kPrefetch = 2;

bool family_op(ops::OpKind op) {
  return ops::has_trait(op, ops::kShape) || ops::has_trait(op, ops::kUnary);
}

struct Families {
  std::vector<int> of;                    // per instr: family id, or -1
  std::vector<std::vector<int>> members;  // per family: instr indices, ascending (seed first)
};

// readers[i]: instrs reading instr i's value, ascending.
std::vector<std::vector<int>> readers_of(const ir::Graph& g) {
  const int first = static_cast<int>(g.inputs.size()), n = static_cast<int>(g.instrs.size());
  std::vector<std::vector<int>> readers(n);
  for (int i = 0; i < n; ++i)
    for (int v : g.instrs[i].operands)
      if (v >= first && (readers[v - first].empty() || readers[v - first].back() != i))
        readers[v - first].push_back(i);
  return readers;
}

Families find_families(const ir::Graph& g, const std::vector<std::vector<int>>& readers) {
  const int first = static_cast<int>(g.inputs.size()), n = static_cast<int>(g.instrs.size());
  Families f{std::vector<int>(n, -1), {}};
  for (int s = 0; s < n; ++s) {
    const ir::Instr& in = g.instrs[s];
    if (in.op != ops::OpKind::k_all_gather || in.operands[0] >= first || f.of[s] >= 0) continue;
    const int id = static_cast<int>(f.members.size());
    f.members.push_back({s});
    f.of[s] = id;
    // Candidates in index order: when one is examined, its operands are decided.
    std::priority_queue<int, std::vector<int>, std::greater<int>> next;
    for (int r : readers[s]) next.push(r);
    int last = -1;
    while (!next.empty()) {
      const int j = next.top();
      next.pop();
      if (j == last) continue;
      last = j;
      const ir::Instr& c = g.instrs[j];
      if (f.of[j] >= 0 || !family_op(c.op) || ops::has_trait(c.op, ops::kRandom)) continue;
      bool inside = true;
      for (int v : c.operands) inside = inside && (v < first || f.of[v - first] == id);
      if (!inside) continue;
      f.of[j] = id;
      f.members[id].push_back(j);
      for (int r : readers[j]) next.push(r);
    }
  }
  return f;
}

// One family's outside reads: (reader position, member) pairs; a graph output
// reads at position n.
std::vector<std::pair<int, int>> outside_reads(const ir::Graph& g, const Families& f, int id,
                                               const std::vector<std::vector<int>>& readers) {
  const int first = static_cast<int>(g.inputs.size()), n = static_cast<int>(g.instrs.size());
  std::vector<std::pair<int, int>> reads;
  for (int m : f.members[id]) {
    for (int r : readers[m])
      if (f.of[r] != id) reads.push_back({r, m});
    for (int v : g.outputs)
      if (v == first + m) reads.push_back({n, m});
  }
  std::sort(reads.begin(), reads.end());
  return reads;
}

// Cluster index per entry of `reads` (sorted by position): a new cluster
// where another family's whole reader span lies strictly between two reads.
std::vector<int> clusters_of(const std::vector<std::pair<int, int>>& reads,
                             const std::vector<std::pair<int, int>>& spans_by_first,
                             const std::vector<int>& suffix_min_last) {
  std::vector<int> cluster(reads.size(), 0);
  for (size_t k = 1; k < reads.size(); ++k) {
    const int a = reads[k - 1].first, b = reads[k].first;
    cluster[k] = cluster[k - 1];
    if (a == b) continue;
    auto it = std::upper_bound(spans_by_first.begin(), spans_by_first.end(),
                               std::make_pair(a, std::numeric_limits<int>::max()));
    const size_t at = static_cast<size_t>(it - spans_by_first.begin());
    if (at < spans_by_first.size() && suffix_min_last[at] < b) ++cluster[k];
  }
  return cluster;
}

struct Instance {
  int first_read;            // position of its first outside reader
  std::vector<int> members;  // instr indices (originals or clones), ascending
};

class GatherSchedule final : public Pass {
 public:
  std::string_view name() const override { return "gather_schedule"; }

  bool run(ir::Graph& g) override {
    if (!settings::flag(Setting::gather_schedule)) return false;
    const int n = static_cast<int>(g.instrs.size());
    std::vector<std::vector<int>> readers = readers_of(g);
    const Families fam = find_families(g, readers);
    if (fam.members.empty()) return false;
    const int nf = static_cast<int>(fam.members.size());
    std::vector<std::vector<std::pair<int, int>>> reads(nf);
    std::vector<std::pair<int, int>> spans;  // (first read, last read) per family
    for (int id = 0; id < nf; ++id) {
      reads[id] = outside_reads(g, fam, id, readers);
      if (!reads[id].empty()) spans.push_back({reads[id].front().first, reads[id].back().first});
    }
    std::sort(spans.begin(), spans.end());
    std::vector<int> suffix_min(spans.size() + 1, std::numeric_limits<int>::max());
    for (size_t k = spans.size(); k-- > 0;)
      suffix_min[k] = std::min(suffix_min[k + 1], spans[k].second);

    std::vector<Instance> instances;
    for (int id = 0; id < nf; ++id) {
      if (reads[id].empty()) continue;
      const std::vector<int> cluster = clusters_of(reads[id], spans, suffix_min);
      const int count = cluster.back() + 1;
      for (int c = 0; c < count; ++c)
        instances.push_back(regather(g, fam, id, reads[id], cluster, c, n));
    }
    std::sort(instances.begin(), instances.end(),
              [](const Instance& a, const Instance& b) { return a.first_read < b.first_read; });
    place(g, instances, n);
    make_dce()->run(g);
    return true;
  }

 private:
  // Cluster c of family id as an instance: c == 0 keeps the originals; a later
  // cluster gets clones of the members its readers need (appended to g), and
  // its readers are rewired to them. `n`: the instrs before any clone (a read
  // at n is a graph output's: outside_reads).
  static Instance regather(ir::Graph& g, const Families& fam, int id,
                           const std::vector<std::pair<int, int>>& reads,
                           const std::vector<int>& cluster, int c, int n) {
    const int first = static_cast<int>(g.inputs.size()), n_reads = static_cast<int>(reads.size());
    Instance inst{std::numeric_limits<int>::max(), {}};
    std::vector<bool> needed(g.instrs.size(), false);
    for (int k = 0; k < n_reads; ++k)
      if (cluster[k] == c) {
        inst.first_read = std::min(inst.first_read, reads[k].first);
        needed[reads[k].second] = true;
      }
    const std::vector<int>& members = fam.members[id];
    for (size_t k = members.size(); k-- > 0;) {  // members' ancestors within the family
      const int m = members[k];
      if (!needed[m]) continue;
      for (int v : g.instrs[m].operands)
        if (v >= first) needed[v - first] = true;
    }
    if (c == 0) {
      for (int m : members)
        if (needed[m]) inst.members.push_back(m);
      return inst;
    }
    std::vector<int> clone_of(g.instrs.size(), -1);  // original instr -> clone's value id
    for (int m : members) {
      if (!needed[m]) continue;
      ir::Instr copy = g.instrs[m];
      for (int& v : copy.operands)
        if (v >= first && clone_of[v - first] >= 0) v = clone_of[v - first];
      clone_of[m] = first + static_cast<int>(g.instrs.size());
      inst.members.push_back(static_cast<int>(g.instrs.size()));
      g.instrs.push_back(std::move(copy));
    }
    auto rewire = [&](int& v) {
      if (v >= first && v - first < static_cast<int>(clone_of.size()) && clone_of[v - first] >= 0)
        v = clone_of[v - first];
    };
    for (int k = 0; k < n_reads; ++k) {
      if (cluster[k] != c) continue;
      if (reads[k].first < n) {
        for (int& v : g.instrs[reads[k].first].operands)
          if (v == first + reads[k].second) rewire(v);
      } else {
        for (int& v : g.outputs)
          if (v == first + reads[k].second) rewire(v);
      }
    }
    return inst;
  }

  // Priorities for reorder_by_priority: an op outside the families keeps its
  // position p (2p + 1); a family member goes just before its first reader
  // (2 x that reader's position); an instance's all_gather no later than the
  // first reader of the instance kPrefetch before it.
  static void place(ir::Graph& g, const std::vector<Instance>& instances, int n) {
    const int total = static_cast<int>(g.instrs.size());
    std::vector<int64_t> priority(total);
    std::vector<int> instance_of(total, -1);
    for (int i = 0; i < n; ++i) priority[i] = 2 * static_cast<int64_t>(i) + 1;
    for (size_t k = 0; k < instances.size(); ++k)
      for (int m : instances[k].members) instance_of[m] = static_cast<int>(k);
    const std::vector<std::vector<int>> readers = readers_of(g);
    std::vector<int64_t> anchor(total, 2 * static_cast<int64_t>(n));
    for (size_t k = 0; k < instances.size(); ++k) {
      const std::vector<int>& ms = instances[k].members;
      for (size_t j = ms.size(); j-- > 0;) {
        const int m = ms[j];
        int64_t at = 2 * static_cast<int64_t>(n);
        for (int r : readers[m])
          at = std::min(
              at, instance_of[r] == static_cast<int>(k) ? anchor[r] : 2 * static_cast<int64_t>(r));
        anchor[m] = at;
      }
      int64_t gather_at = k >= static_cast<size_t>(kPrefetch)
                              ? 2 * static_cast<int64_t>(instances[k - kPrefetch].first_read)
                              : 0;
      for (int m : ms) {
        const bool seed = g.instrs[m].op == ops::OpKind::k_all_gather;
        priority[m] = seed ? std::min(anchor[m], gather_at) : anchor[m];
      }
    }
    reorder_by_priority(g, priority);
  }
};

}  // namespace

std::unique_ptr<Pass> make_gather_schedule() { return std::make_unique<GatherSchedule>(); }

}  // namespace loom::compiler
