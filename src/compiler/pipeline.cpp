// PassPipeline, the default pipeline and the shared replace_uses and
// reorder_by_priority helpers.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <queue>

#include "compiler/pass.h"
#include "core/settings.h"
#include "loom/error.h"

namespace loom::compiler {

PassPipeline& PassPipeline::add(std::unique_ptr<Pass> pass) {
  passes_.push_back(std::move(pass));
  return *this;
}

namespace {
bool verify_between_passes() {
#ifndef NDEBUG
  return true;
#else
  return settings::flag(Setting::verify);
#endif
}
}  // namespace

bool PassPipeline::run(ir::Graph& graph) const {
  const std::string& dump = settings::text(Setting::dump_ir);
  std::string prefix = dump.empty() ? "" : dump + "/" + ir::graph_hash(graph).hex();
  bool verify = verify_between_passes();
  bool changed = false;
  int n = 0;
  for (const auto& pass : passes_) {
    changed = pass->run(graph) || changed;
    if (verify) ir::verify(graph);
    if (!dump.empty()) {
      std::ofstream(prefix + "." + std::to_string(++n) + "." + std::string(pass->name()) + ".ir")
          << ir::to_text(graph);
    }
  }
  return changed;
}

PassPipeline default_pipeline(std::function<bool(ops::OpKind)> supported) {
  std::vector<ops::OpKind> forced = forced_decompositions();
  auto keep = [supported = std::move(supported), forced](ops::OpKind op) {
    return supported(op) && std::find(forced.begin(), forced.end(), op) == forced.end();
  };
  PassPipeline p;
  p.add(make_decompose(keep))
      .add(make_algebraic())
      .add(make_const_fold())
      .add(make_cse())
      .add(make_fused_cross_entropy(keep))
      .add(make_matmul_batch_sum())
      .add(make_cast_hoist())
      .add(make_matmul_layout())
      .add(make_index_add_fold())
      .add(make_dce())
      .add(make_remat())
      .add(make_collective_schedule())
      .add(make_gather_schedule());
  return p;
}

PassPipeline default_pipeline() {
  return default_pipeline([](ops::OpKind) { return true; });
}

void replace_uses(ir::Graph& graph, const std::vector<int>& replace) {
  auto resolve = [&](int v) {
    while (replace[v] != v) v = replace[v];
    return v;
  };
  for (ir::Instr& in : graph.instrs)
    for (int& v : in.operands) v = resolve(v);
  for (int& v : graph.outputs) v = resolve(v);
}

bool reorder_by_priority(ir::Graph& g, const std::vector<int64_t>& priority) {
  const int first = static_cast<int>(g.inputs.size()), n = static_cast<int>(g.instrs.size());
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> readers(n);
  for (int i = 0; i < n; ++i)
    for (int v : g.instrs[i].operands)
      if (v >= first) ++pending[i], readers[v - first].push_back(i);
  using Item = std::pair<int64_t, int>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ready;
  for (int i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push({priority[i], i});
  std::vector<int> renumber(g.num_values());
  for (int v = 0; v < first; ++v) renumber[v] = v;
  std::vector<int> order;
  order.reserve(n);
  while (!ready.empty()) {
    const int i = ready.top().second;
    ready.pop();
    renumber[first + i] = first + static_cast<int>(order.size());
    order.push_back(i);
    for (int r : readers[i])
      if (--pending[r] == 0) ready.push({priority[r], r});
  }
  LOOM_CHECK(static_cast<int>(order.size()) == n, "[schedule] the graph has a cycle");
  bool changed = false;
  std::vector<ir::Instr> out;
  out.reserve(n);
  for (int k = 0; k < n; ++k) {
    changed = changed || order[k] != k;
    out.push_back(std::move(g.instrs[order[k]]));
    for (int& v : out.back().operands) v = renumber[v];
  }
  for (int& v : g.outputs) v = renumber[v];
  g.instrs = std::move(out);
  return changed;
}

}  // namespace loom::compiler
