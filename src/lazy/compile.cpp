// Compile: on a cache miss, run the passes (or take the optimized graph
// from the disk cache), lower it to a Program and let the backend compile
// it — which plans its memory (compiler/memory/). The compiler sees the
// backend only through its Capabilities.
#include <chrono>
#include <cstdlib>
#include <iostream>

#include "compiler/pass.h"
#include "core/settings.h"
#include "lazy/graph_executor.h"
#include "lazy/host_time.h"
#include "loom/metrics.h"

namespace loom::lazy {
namespace {

using Clock = std::chrono::steady_clock;

ir::Graph optimize(const Collected& c, const Hash128& key, const backends::Capabilities& caps,
                   RecompileTracker& tracker) {
  std::optional<ir::Graph> optimized = disk_cache_load(key, c.graph.inputs);
  if (optimized) {
    metrics::add_counter("PersistentCacheHit");
    return std::move(*optimized);
  }
  if (!disk_cache_path(key).empty()) metrics::add_counter("PersistentCacheMiss");
  std::string cause = tracker.explain(c.graph);
  if (!cause.empty()) {
    metrics::add_recompile_cause(cause);
    if (settings::integer(Setting::debug) == 1) std::cerr << "[loom] recompile: " << cause << "\n";
  }
  metrics::add_counter("UncachedCompile");
  ir::Graph g = c.graph;
  compiler::default_pipeline([&caps](ops::OpKind op) { return caps.supports(op); }).run(g);
  disk_cache_store(key, g);
  return g;
}

}  // namespace

std::shared_ptr<backends::Executable> compile_graph(const Collected& c, const Hash128& key,
                                                    const backends::Backend& backend,
                                                    CompileState state) {
  if (auto hit = state.cache.get(key)) {
    metrics::add_counter("CachedCompile");
    return hit;
  }
  HostWait compiling;  // CompileTime, not the steady-state HostTime
  auto t0 = Clock::now();
  backends::Capabilities caps = backend.capabilities();
  ir::Graph optimized = optimize(c, key, caps, state.tracker);
  state.tracker.remember(c.graph, key);
  auto program =
      std::make_shared<compiler::Program>(compiler::lower(optimized, caps.fuse_elementwise));
  std::shared_ptr<backends::Executable> exe = backend.compile(std::move(program));
  metrics::add_time(
      "CompileTime",
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
  report_plan(*exe, key);
  state.cache.put(key, exe);
  return exe;
}

}  // namespace loom::lazy
