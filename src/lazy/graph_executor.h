// The graph executor's named steps (PyTorch's LazyGraphExecutor), one file
// each: collect.cpp (the pending graph of the roots, post-order, inputs
// deduped by buffer; which inputs may be donated), graph_key.cpp (hash),
// compile_cache.cpp (cache), compile.cpp (passes, lowering, the backend's
// compile, which plans memory), plan_report.cpp (the plan's metrics and
// LOOM_DEBUG line), execute.cpp (run the executable on the executor
// thread), rebind.cpp (results become device data; host reads go through
// the backend's copies). graph_executor.cpp strings them together (sync,
// mark_step). Internal to lazy/.
#pragma once

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "backends/executable.h"
#include "core/hash.h"
#include "ir/graph.h"
#include "lazy/compile_cache.h"
#include "lazy/recompile.h"
#include "lazy/tensor_impl.h"
#include "lazy/trace.h"

namespace loom::lazy {

// ---- collect ----
struct Collected {
  ir::Graph graph;
  std::vector<TraceNodePtr> input_nodes;  // device data or in-flight results
  std::vector<bool> donatable;            // input buffer unreachable after this step
  // In flight at collection and held then by the job computing it (or by a
  // tensor): donatable if, when this job runs, only this job holds it.
  std::vector<bool> donatable_if_released;
  std::vector<TraceNodePtr> output_nodes;
};
/// The graph computing `roots` (pending nodes): post-order, one input per
/// distinct buffer (or in-flight node), outputs = the pending roots.
Collected collect(const std::vector<TraceNodePtr>& roots);
/// The pending nodes strictly inside the collected graph (not outputs),
/// less those a pending node of `keep` reaches through pending nodes that
/// are not outputs (the recipe of an unsynced value, which later graphs
/// compute again: its operands must survive this sync).
std::vector<TraceNodePtr> internal_nodes(const Collected& c,
                                         const std::vector<TraceNodePtr>& keep = {});
/// After a full sync: drops the internal and output nodes' operands (the
/// outputs are in flight), then marks each input nobody else holds as
/// donatable.
void release_and_find_donations(Collected& c, std::vector<TraceNodePtr> internal);

// ---- hash ----
/// The compile-cache key: the graph's structural hash, the backend and the
/// options that change the compiled program (LOOM_DECOMPOSE).
Hash128 graph_key(const ir::Graph& graph, std::string_view backend);

// ---- compile (+ plan) ----
struct CompileState {
  CompileCache& cache;
  RecompileTracker& tracker;
};
/// The executable for `c` on `backend`: from the cache, else passes (or
/// the disk cache), lowering and backend.compile() (memory plan included).
std::shared_ptr<backends::Executable> compile_graph(const Collected& c, const Hash128& key,
                                                    const backends::Backend& backend,
                                                    CompileState state);
/// Records the executable's memory plan in the metrics; LOOM_DEBUG=1 prints it.
void report_plan(const backends::Executable& exe, const Hash128& key);

// ---- execute + rebind (on the executor thread) ----
struct Job {
  std::shared_ptr<backends::Executable> executable;
  Collected collected;
  std::promise<void> done;
};
/// Runs the job's executable on its inputs' buffers, then rebinds.
void execute(Job& job);
/// Makes each output node device data (its buffer) and drops its operands.
void rebind_outputs(Job& job, std::vector<BufferPtr> outputs);
/// Waits for `impl`'s value if in flight, then exposes its data.
void refresh(TensorImpl& impl);

}  // namespace loom::lazy
