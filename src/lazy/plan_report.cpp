// Plan: the memory plan of a freshly compiled executable (computed by
// compiler/memory/ inside backend.compile) goes into the metrics
// (lazy_metrics.json "executables") and, with LOOM_DEBUG=1, to stderr.
#include <cstdlib>
#include <iostream>
#include <string>

#include "lazy/graph_executor.h"
#include "loom/metrics.h"

namespace loom::lazy {

void report_plan(const backends::Executable& exe, const Hash128& key) {
  backends::MemoryReport report = exe.memory_report();
  metrics::record_executable(key.hex(), report.values);
  const char* debug = std::getenv("LOOM_DEBUG");
  if (debug && (std::string(debug) == "1" || std::string(debug) == "2"))
    std::cerr << "[loom] executable " << key.hex().substr(0, 12) << " on " << exe.backend().name()
              << ": " << exe.program().steps.size() << " steps, " << report.summary << "\n";
  const compiler::memory::MemoryPlan& m = exe.plan();
  if (debug && std::string(debug) == "2" && !m.placement.empty()) {  // every output without a donor
    const ir::Graph& g = exe.program().graph;
    for (int v = 0; v < g.num_values(); ++v)
      if (m.placement[v] == compiler::memory::Placement::output && m.donor[v] < 0)
        std::cerr << "[loom]   undonated output %" << v << " " << ops::op_name(g.instr_of(v).op)
                  << " " << ops::to_string(g.type_of(v)) << "\n";
  }
}

}  // namespace loom::lazy
