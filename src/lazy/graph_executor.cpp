// The lazy cycle: trace -> sync -> the named steps of graph_executor.h
// (collect, hash, cache, compile, plan, execute, rebind; one file each) —
// this file holds the live-tensor registry (and that of the rebind_unsynced
// values, whose recipes a full sync keeps), the tracing entry point and
// sync / mark_step, which string the steps together.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <mutex>

#include "backends/backend.h"
#include "backends/executable.h"
#include "core/allocator.h"
#include "core/malloc_policy.h"
#include "core/settings.h"
#include "lazy/eager.h"
#include "lazy/executor.h"
#include "lazy/graph_executor.h"
#include "lazy/host_time.h"
#include "loom/error.h"
#include "loom/lazy.h"
#include "loom/metrics.h"

namespace loom::lazy {
namespace {

struct State {
  std::recursive_mutex mu;
  std::vector<std::weak_ptr<TensorImpl>> live;
  // rebind_unsynced tensors and the node each was given (kept recipes).
  std::vector<std::pair<std::weak_ptr<TensorImpl>, std::weak_ptr<TraceNode>>> unsynced;
  int64_t pending = 0;
  CompileCache cache{static_cast<size_t>(settings::integer(Setting::cache_size))};
  RecompileTracker tracker;
  Executor executor;
};
// Never destroyed: the executor thread may still be parked at exit. What
// jobs use (the metrics registry, the globals of each backend a graph runs
// on: warm_up_backend) is created first, then an exit handler waits for the
// queued jobs: exit handlers and static destructors run in reverse order of
// registration, so no job runs while that state is being destroyed.
State& state() {
  static State* s = [] {
    metrics::counter("");
    retain_freed_memory();  // steps reuse their temporaries' pages
    auto* created = new State();
    std::atexit([] { state().executor.drain(); });
    return created;
  }();
  return *s;
}

// Creates the process-wide state of the backend `name` (Backend::warm_up) the
// first time a graph is sent to it, on the calling thread, then registers one
// more exit-time drain, which runs before that state is destroyed. Only the
// backends a process uses are built: constructing every registered one would
// reserve lazy:sim's address space (fails under `ulimit -v`) and run xla's
// plugin discovery in every lazy process.
void warm_up_backend(const std::string& name) {
  static std::mutex mutex;
  static std::vector<std::string> warmed;
  std::lock_guard<std::mutex> lock(mutex);
  if (std::find(warmed.begin(), warmed.end(), name) != warmed.end()) return;
  backends::backend_by_name(name).warm_up();
  warmed.push_back(name);
  std::atexit([] { state().executor.drain(); });
}

int64_t max_graph_nodes() {
  static const int64_t n = settings::integer(Setting::max_graph_nodes);
  return n;
}

// collect -> hash -> cache/compile/plan -> (executor thread) execute -> rebind.
// `keep` (full sync only): pending values whose recipes must survive.
void sync_nodes(const std::vector<TraceNodePtr>& roots, const std::string& backend_name,
                bool full_sync, const std::vector<TraceNodePtr>& keep = {}) {
  State& s = state();
  warm_up_backend(backend_name);
  auto job = std::make_shared<Job>();
  job->collected = collect(roots);
  Collected& c = job->collected;
  if (c.output_nodes.empty()) return;
  metrics::add_time("TensorsGraphSize", static_cast<int64_t>(c.graph.instrs.size()));
  Hash128 key = graph_key(c.graph, backend_name);
  job->executable =
      compile_graph(c, key, backends::backend_by_name(backend_name), {s.cache, s.tracker});
  std::shared_future<void> ready = job->done.get_future().share();
  std::vector<TraceNodePtr> internal;
  if (full_sync) internal = internal_nodes(c, keep);
  for (auto& n : c.output_nodes) n->ready = ready;
  if (full_sync) {
    release_and_find_donations(c, std::move(internal));
  } else {
    c.donatable.assign(c.input_nodes.size(), false);
  }
  s.pending = 0;
  s.executor.submit([job] { execute(*job); });
}

}  // namespace

TraceNodePtr data_node(BufferPtr data, const ops::TensorType& type) {
  auto n = std::make_shared<TraceNode>();
  n->type = type;
  n->data = std::move(data);
  metrics::add_counter("InboundData", static_cast<int64_t>(type.nbytes()));
  return n;
}

void register_live(const Tensor& t) {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  s.live.push_back(t.impl_ptr());
}

void register_unsynced(const Tensor& t) {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  s.unsynced.emplace_back(t.impl_ptr(), t.impl()->node);
}

Tensor trace_op(ops::OpKind op, const std::vector<Tensor>& inputs, const ops::Attrs& attrs,
                const ops::TensorType& type, const Device& device) {
  auto node = std::make_shared<TraceNode>();
  node->op = op;
  node->attrs = attrs;
  node->type = type;
  node->remat = current_remat_mark();
  for (const Tensor& t : inputs) node->operands.push_back(t.impl()->node);
  auto impl = std::make_shared<TensorImpl>();
  impl->type = type;
  impl->device = device;
  impl->node = std::move(node);
  Tensor out(std::move(impl));
  register_live(out);
  State& s = state();
  if (++s.pending > max_graph_nodes()) {
    std::cerr << "[loom] warning: the pending graph has over " << max_graph_nodes()
              << " nodes without a mark_step(); syncing now (call loom::lazy::mark_step() "
                 "once per training step)\n";
    mark_step();
  }
  return out;
}

void ensure_materialized(const Tensor& t) {
  TensorImpl& impl = *t.impl();
  if (!impl.node) return;
  if (impl.node->is_pending()) {
    metrics::add_counter("EarlySync");
    sync({t});
  }
  refresh(impl);
  metrics::add_counter("OutboundData", static_cast<int64_t>(impl.type.nbytes()));
}

namespace {
void launch(const std::vector<Tensor>& tensors, bool full_sync,
            const std::vector<TraceNodePtr>& keep = {}) {
  std::vector<TraceNodePtr> roots;
  std::string backend = "cpu";
  for (const Tensor& t : tensors)
    if (t.defined() && t.device().is_lazy() && t.impl()->node && t.impl()->node->is_pending()) {
      roots.push_back(t.impl()->node);
      backend = t.device().backend;
    }
  if (!roots.empty()) sync_nodes(roots, backend, full_sync, keep);
}

// The pending values of the rebind_unsynced tensors still holding them;
// drops the other entries (tensor gone, rebound since, or value computed).
std::vector<TraceNodePtr> take_unsynced_values(State& s) {
  std::vector<TraceNodePtr> keep;
  std::vector<std::pair<std::weak_ptr<TensorImpl>, std::weak_ptr<TraceNode>>> still;
  for (auto& [w, wn] : s.unsynced) {
    auto impl = w.lock();
    TraceNodePtr node = wn.lock();
    if (!impl || !node || impl->node != node || !node->is_pending()) continue;
    keep.push_back(node);
    still.emplace_back(std::move(w), std::move(wn));
  }
  s.unsynced = std::move(still);
  return keep;
}
}  // namespace

void sync(const std::vector<Tensor>& tensors) {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  launch(tensors, false);
  for (const Tensor& t : tensors)
    if (t.defined()) refresh(*t.impl());
}

void mark_step() {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  metrics::add_counter("MarkStep");
  std::vector<Tensor> pending;
  std::vector<std::weak_ptr<TensorImpl>> still_live;
  for (auto& w : s.live) {
    auto impl = w.lock();
    if (impl && impl->node && impl->node->is_pending()) pending.push_back(Tensor(impl));
  }
  s.live.clear();
  // Returns once launched; values are waited for when read.
  launch(pending, true, take_unsynced_values(s));
  if (!s.executor.asynchronous()) s.executor.drain();
  record_host_step();
}

void wait() { state().executor.drain(); }

int64_t pending_nodes() { return state().pending; }

void empty_cache() {
  State& s = state();
  s.executor.drain();  // no run may be using the arenas released below
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  backends::release_shared_arenas();
  release_host_cache();
}

void clear_compile_cache() {
  State& s = state();
  s.executor.drain();  // no run may be using the arenas released below
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  s.cache.clear();
  s.tracker.clear();
  clear_eager_cache();
  backends::release_shared_arenas();
}

}  // namespace loom::lazy
