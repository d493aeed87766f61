// split_at_collectives (collective_split.h).
#include "backends/xla/collective_split.h"

#include <algorithm>

#include "ops/op_kind.h"

namespace loom::backends::xla {
namespace {

bool split_is_collective(const ir::Instr& instr) {
  return (ops::op_traits(instr.op) & ops::kCollective) != 0;
}

// Per value: its level (see the header).
std::vector<int> split_levels(const ir::Graph& g) {
  std::vector<int> level(g.num_values(), 0);
  const int n_in = static_cast<int>(g.inputs.size());
  for (int i = 0; i < static_cast<int>(g.instrs.size()); ++i) {
    const ir::Instr& in = g.instrs[i];
    int l = 0;
    for (int o : in.operands) l = std::max(l, level[o]);
    level[n_in + i] = split_is_collective(in) ? l + 1 : l;
  }
  return level;
}

}  // namespace

SplitGraph split_at_collectives(const ir::Graph& g) {
  const int n_in = static_cast<int>(g.inputs.size());
  const int n = g.num_values();
  std::vector<int> level = split_levels(g);
  int stages = 1;
  for (int v = n_in; v < n; ++v) stages = std::max(stages, level[v] + 1);

  // Where each value is defined (-1: an input or a collective's result) and
  // whether something outside its own stage reads it.
  std::vector<int> home(n, -1);
  for (int v = n_in; v < n; ++v)
    if (!split_is_collective(g.instr_of(v))) home[v] = level[v];
  std::vector<bool> exported(n, false);
  for (int v = n_in; v < n; ++v) {
    const ir::Instr& in = g.instr_of(v);
    for (int o : in.operands)
      if (home[o] >= 0 && (split_is_collective(in) || home[o] != home[v])) exported[o] = true;
  }
  for (int v : g.outputs)
    if (home[v] >= 0) exported[v] = true;

  SplitGraph out;
  out.stages.resize(stages);
  out.before.resize(stages);
  std::vector<int> local(n, -1);  // value id inside its reader's stage (reset per stage)
  for (int k = 0; k < stages; ++k) {
    SplitStage& st = out.stages[k];
    std::fill(local.begin(), local.end(), -1);
    auto local_of = [&](int v) {
      if (local[v] < 0) {  // read from outside: a new stage input
        local[v] = static_cast<int>(st.inputs.size());
        st.inputs.push_back(v);
        st.graph.inputs.push_back(g.type_of(v));
      }
      return local[v];
    };
    // Inputs first (their ids precede the instrs'): collect them in a first pass.
    for (int v = n_in; v < n; ++v)
      if (home[v] == k)
        for (int o : g.instr_of(v).operands)
          if (home[o] != k) local_of(o);
    const int k_inputs = static_cast<int>(st.inputs.size());
    for (int v = n_in; v < n; ++v) {
      if (home[v] != k) continue;
      ir::Instr copy = g.instr_of(v);
      for (int& o : copy.operands) o = local[o];
      local[v] = k_inputs + static_cast<int>(st.graph.instrs.size());
      st.graph.instrs.push_back(std::move(copy));
      if (exported[v]) {
        st.outputs.push_back(v);
        st.graph.outputs.push_back(local[v]);
      }
    }
  }
  for (int v = n_in; v < n; ++v)
    if (split_is_collective(g.instr_of(v))) out.before[level[v]].push_back(v);
  return out;
}

}  // namespace loom::backends::xla
