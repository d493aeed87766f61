// Plan: the memory plan of a freshly compiled executable (computed by
// compiler/memory/ inside backend.compile) goes into the metrics
// (lazy_metrics.json "executables") and, with LOOM_DEBUG=1, to stderr;
// LOOM_DEBUG=2 adds the undonated outputs and the values live at the arena's peak.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "backends/kernel_executable.h"
#include "core/settings.h"
#include "lazy/graph_executor.h"
#include "loom/metrics.h"

namespace loom::lazy {

namespace {

// LOOM_DEBUG=2: the step where the arena values live together are largest,
// and the largest of them (op, type, live steps): where a step's memory goes.
void print_peak_live(const backends::KernelExecutable& exe) {
  const compiler::memory::MemoryPlan& m = exe.plan();
  const ir::Graph& g = exe.program().graph;
  const int steps = static_cast<int>(exe.program().steps.size());
  std::vector<int64_t> live(steps + 1, 0);  // difference array over steps
  for (int v = 0; v < g.num_values(); ++v) {
    if (m.placement[v] != compiler::memory::Placement::arena || m.first[v] < 0) continue;
    live[m.first[v]] += static_cast<int64_t>(g.type_of(v).nbytes());
    live[std::min(m.last[v], steps - 1) + 1] -= static_cast<int64_t>(g.type_of(v).nbytes());
  }
  int peak = 0;
  int64_t run = 0, best = -1;
  for (int s = 0; s < steps; ++s) {
    run += live[s];
    if (run > best) best = run, peak = s;
  }
  std::vector<std::pair<size_t, int>> at_peak;
  for (int v = 0; v < g.num_values(); ++v)
    if (m.placement[v] == compiler::memory::Placement::arena && m.first[v] >= 0 &&
        m.first[v] <= peak && m.last[v] >= peak)
      at_peak.push_back({g.type_of(v).nbytes(), v});
  std::sort(at_peak.rbegin(), at_peak.rend());
  std::cerr << "[loom]   live arena bytes peak at step " << peak << " of " << steps << ": " << best
            << " bytes in " << at_peak.size() << " values; the largest:\n";
  for (size_t k = 0; k < at_peak.size() && k < 12; ++k) {
    const int v = at_peak[k].second;
    std::cerr << "[loom]     %" << v << " " << ops::op_name(g.instr_of(v).op) << " "
              << ops::to_string(g.type_of(v)) << " steps " << m.first[v] << ".." << m.last[v]
              << "\n";
  }
}

}  // namespace

void report_plan(const backends::Executable& exe, const Hash128& key) {
  backends::MemoryReport report = exe.memory_report();
  metrics::record_executable(key.hex(), report.values);
  const int64_t debug = settings::integer(Setting::debug);
  if (debug >= 1)
    std::cerr << "[loom] executable " << key.hex().substr(0, 12) << " on " << exe.backend().name()
              << ": " << exe.program().steps.size() << " steps, " << report.summary << "\n";
  // A KernelExecutable's memory plan: every output without a donor.
  const auto* planned = dynamic_cast<const backends::KernelExecutable*>(&exe);
  if (debug == 2 && planned != nullptr) {
    const compiler::memory::MemoryPlan& m = planned->plan();
    const ir::Graph& g = exe.program().graph;
    for (int v = 0; v < g.num_values(); ++v)
      if (m.placement[v] == compiler::memory::Placement::output && m.donor[v] < 0)
        std::cerr << "[loom]   undonated output %" << v << " " << ops::op_name(g.instr_of(v).op)
                  << " " << ops::to_string(g.type_of(v)) << "\n";
    print_peak_live(*planned);
  }
}

}  // namespace loom::lazy
