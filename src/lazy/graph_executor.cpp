// The lazy cycle: trace -> sync (collect live pending tensors, post-order,
// hash) -> compile on a cache miss (passes, lowering) -> execute -> rebind.
// Named steps follow PyTorch's LazyGraphExecutor.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "backends/backend.h"
#include "compiler/pass.h"
#include "lazy/compile_cache.h"
#include "lazy/executor.h"
#include "lazy/recompile.h"
#include "lazy/tensor_impl.h"
#include "lazy/trace.h"
#include "loom/error.h"
#include "loom/lazy.h"
#include "loom/metrics.h"

namespace loom::lazy {
namespace {

using Clock = std::chrono::steady_clock;
int64_t ns_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count();
}

struct State {
  std::recursive_mutex mu;
  std::vector<std::weak_ptr<TensorImpl>> live;
  int64_t pending = 0;
  CompileCache cache{[] {
    const char* s = std::getenv("LOOM_CACHE_SIZE");
    return s ? static_cast<size_t>(std::atoll(s)) : size_t{1024};
  }()};
  RecompileTracker tracker;
  Executor executor;
};
// Never destroyed: the executor thread may still be parked at exit. What
// jobs use (the metrics registry, the backends' globals) is created first,
// then an exit handler waits for the queued jobs: exit handlers and static
// destructors run in reverse order of registration, so no job runs while
// that state is being destroyed.
State& state() {
  static State* s = [] {
    metrics::counter("");
    backends::cpu_backend().warm_up();
    backends::reference_backend().warm_up();
    auto* created = new State();
    std::atexit([] { state().executor.drain(); });
    return created;
  }();
  return *s;
}

int64_t max_graph_nodes() {
  static const int64_t n = [] {
    const char* s = std::getenv("LOOM_MAX_GRAPH_NODES");
    return s ? std::atoll(s) : int64_t{200000};
  }();
  return n;
}

// ---- collect: the graph of the given roots ----
struct Collected {
  ir::Graph graph;
  std::vector<TraceNodePtr> input_nodes;  // device data or in-flight results
  std::vector<bool> donatable;            // input buffer unreachable after this step
  std::vector<TraceNodePtr> output_nodes;
};

Collected collect(const std::vector<TraceNodePtr>& roots) {
  Collected c;
  std::unordered_map<TraceNode*, int> id;
  std::unordered_map<const void*, int> input_of;  // dedupe by buffer (or node)
  std::vector<TraceNode*> order;                  // post-order of pending nodes
  std::vector<std::pair<TraceNode*, size_t>> stack;
  for (const TraceNodePtr& r : roots) {
    if (id.count(r.get())) continue;
    stack.push_back({r.get(), 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (!n->is_pending()) {  // a graph input
        const void* key = n->ready.valid() ? static_cast<const void*>(n) : n->data.get();
        auto [it, fresh] = input_of.try_emplace(key, static_cast<int>(c.graph.inputs.size()));
        if (fresh) {
          c.graph.inputs.push_back(n->type);
          c.input_nodes.push_back(nullptr);  // filled below from a shared_ptr
        }
        id[n] = -1 - it->second;
        stack.pop_back();
        continue;
      }
      if (next < n->operands.size()) {
        TraceNode* child = n->operands[next++].get();
        if (!id.count(child)) stack.push_back({child, 0});
        continue;
      }
      id[n] = static_cast<int>(order.size());
      order.push_back(n);
      stack.pop_back();
    }
  }
  int first = static_cast<int>(c.graph.inputs.size());
  auto value_of = [&](TraceNode* n) {
    int v = id.at(n);
    return v < 0 ? -1 - v : first + v;
  };
  for (TraceNode* n : order) {
    ir::Instr in{n->op, n->attrs, {}, n->type};
    for (const TraceNodePtr& o : n->operands) {
      int v = value_of(o.get());
      in.operands.push_back(v);
      if (v < first && !c.input_nodes[v]) c.input_nodes[v] = o;
    }
    c.graph.instrs.push_back(std::move(in));
  }
  for (const TraceNodePtr& r : roots) {
    if (!r->is_pending()) continue;
    c.graph.outputs.push_back(value_of(r.get()));
    c.output_nodes.push_back(r);
  }
  return c;
}

// After a full sync nothing can reach the collected graph's internal nodes:
// drop their operands, then an input nobody else holds can be donated (its
// buffer reused for the step's results).
void release_and_find_donations(Collected& c, std::vector<TraceNodePtr> internal) {
  for (const TraceNodePtr& n : internal) n->operands.clear();
  internal.clear();
  c.donatable.assign(c.input_nodes.size(), false);
  for (size_t i = 0; i < c.input_nodes.size(); ++i) {
    const TraceNodePtr& n = c.input_nodes[i];
    // Held only by c.input_nodes: no tensor, no other graph can read it again.
    // (An in-flight node's data is written by the executor thread: not read here.)
    c.donatable[i] = n.use_count() == 1 && (n->ready.valid() || n->data.use_count() == 1);
  }
}

// ---- compile ----
std::shared_ptr<const compiler::Program> compile(const Collected& c, const Hash128& key,
                                                 const backends::Backend& backend) {
  State& s = state();
  if (auto hit = s.cache.get(key)) {
    metrics::add_counter("CachedCompile");
    return hit;
  }
  auto t0 = Clock::now();
  std::optional<ir::Graph> optimized = disk_cache_load(key, c.graph.inputs);
  if (optimized) {
    metrics::add_counter("PersistentCacheHit");
  } else {
    if (!disk_cache_path(key).empty()) metrics::add_counter("PersistentCacheMiss");
    std::string cause = s.tracker.explain(c.graph);
    if (!cause.empty()) {
      metrics::add_recompile_cause(cause);
      const char* debug = std::getenv("LOOM_DEBUG");
      if (debug && std::string(debug) == "1") std::cerr << "[loom] recompile: " << cause << "\n";
    }
    metrics::add_counter("UncachedCompile");
    ir::Graph g = c.graph;
    compiler::default_pipeline([&backend](ops::OpKind op) { return backend.supports(op); }).run(g);
    optimized = std::move(g);
    disk_cache_store(key, *optimized);
  }
  s.tracker.remember(c.graph, key);
  auto program = std::make_shared<compiler::Program>(compiler::lower(*optimized, true));
  metrics::add_time("CompileTime", ns_since(t0));
  s.cache.put(key, program);
  return program;
}

// ---- execute (on the executor thread) ----

// Free buffers by byte size, kept from one execution to the next: a training
// step frees and re-allocates the same sizes every step, and fresh pages
// cost page faults (27% of a GPT-2 124M step before this pool was kept).
// After each execution only the sizes that execution allocated are kept, so
// the pool never holds more than one step's temporaries.
using FreeBuffers = std::unordered_map<size_t, std::vector<BufferPtr>>;
struct KeptPool {
  std::mutex mu;
  FreeBuffers free;
};
KeptPool& kept_pool() {
  static KeptPool* p = new KeptPool();  // never destroyed, like State
  return *p;
}

class Runner {
 public:
  Runner(const compiler::Program& p, const backends::Backend& backend) : p_(p), backend_(backend) {
    std::lock_guard<std::mutex> lock(kept_pool().mu);
    pool_.swap(kept_pool().free);
  }
  ~Runner() {
    for (auto it = pool_.begin(); it != pool_.end();) {
      if (allocated_sizes_.count(it->first))
        ++it;
      else
        it = pool_.erase(it);
    }
    std::lock_guard<std::mutex> lock(kept_pool().mu);
    kept_pool().free.swap(pool_);
  }
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  std::vector<BufferPtr> run(std::vector<BufferPtr> inputs, const std::vector<bool>& donatable) {
    const ir::Graph& g = p_.graph;
    slots_.assign(g.num_values(), nullptr);
    reusable_.assign(g.num_values(), true);
    for (size_t i = 0; i < inputs.size(); ++i) {
      slots_[i] = std::move(inputs[i]);
      reusable_[i] = donatable[i];
    }
    for (const compiler::Step& step : p_.steps) {
      if (step.fused)
        run_fused(step);
      else
        run_op(step);
      for (int v : step.free_after) release(v);
    }
    std::vector<BufferPtr> outputs;
    for (int v : g.outputs) outputs.push_back(slots_[v]);
    return outputs;
  }

 private:
  BufferPtr allocate(size_t nbytes) {
    allocated_sizes_.insert(nbytes);
    auto it = pool_.find(nbytes);
    if (it != pool_.end() && !it->second.empty()) {
      BufferPtr b = std::move(it->second.back());
      it->second.pop_back();
      return b;
    }
    return make_buffer(nbytes);
  }
  void release(int v) {
    BufferPtr b = std::move(slots_[v]);
    if (b && reusable_[v] && b.use_count() == 1) pool_[b->nbytes()].push_back(std::move(b));
  }
  void run_op(const compiler::Step& step) {
    const ir::Graph& g = p_.graph;
    int v = step.outputs[0];
    backends::OpCall call{step.instr.op, &step.instr.attrs, {}, {}};
    for (int a : step.inputs) call.inputs.push_back({slots_[a]->data(), g.type_of(a)});
    slots_[v] = allocate(step.instr.type.nbytes());
    call.output = {slots_[v]->data(), step.instr.type};
    backend_.run(call);
  }
  // A fused group may write an output over an input of the same size that
  // dies here (each element is read before it is written): in-place updates
  // of parameters and optimizer state.
  void run_fused(const compiler::Step& step) {
    const ir::Graph& g = p_.graph;
    backends::FusedCall call{&step.group, {}, {}};
    for (int v : step.inputs) call.inputs.push_back({slots_[v]->data(), g.type_of(v)});
    std::vector<int> dying(step.free_after);
    for (int v : step.outputs) {
      size_t nbytes = g.type_of(v).nbytes();
      for (int& d : dying) {
        if (d < 0 || !slots_[d] || !reusable_[d] || slots_[d].use_count() != 1 ||
            g.type_of(d) != g.type_of(v))
          continue;
        slots_[v] = slots_[d];  // shared until release(d) drops the old name
        reusable_[d] = false;
        d = -1;
        break;
      }
      if (!slots_[v]) slots_[v] = allocate(nbytes);
      call.outputs.push_back({slots_[v]->data(), g.type_of(v)});
    }
    backend_.run_fused(call);
  }

  const compiler::Program& p_;
  const backends::Backend& backend_;
  std::vector<BufferPtr> slots_;
  std::vector<bool> reusable_;
  FreeBuffers pool_;
  std::unordered_set<size_t> allocated_sizes_;
};

struct Job {
  std::shared_ptr<const compiler::Program> program;
  Collected collected;
  std::string backend;
  std::promise<void> done;
};

void run_job(Job& job) {
  auto t0 = Clock::now();
  try {
    std::vector<BufferPtr> inputs;
    for (const TraceNodePtr& n : job.collected.input_nodes) {
      // An earlier step failed to produce this input: jobs run in order, so
      // its future is settled; get() re-raises that step's own error.
      if (!n->data && n->ready.valid()) n->ready.get();
      LOOM_CHECK(n->data != nullptr,
                 "[lazy] an input of this step was not computed because an "
                 "earlier step failed");
      inputs.push_back(n->data);
    }
    for (TraceNodePtr& n : job.collected.input_nodes) n.reset();  // drop our extra holds
    Runner runner(*job.program, backends::backend_by_name(job.backend));
    std::vector<BufferPtr> outputs = runner.run(std::move(inputs), job.collected.donatable);
    for (size_t i = 0; i < job.collected.output_nodes.size(); ++i) {
      TraceNode& n = *job.collected.output_nodes[i];
      n.data = outputs[i];
      n.operands.clear();
    }
    metrics::add_time("ExecuteTime", ns_since(t0));
    metrics::add_counter("ExecuteCount");
    job.done.set_value();
  } catch (...) {
    for (auto& n : job.collected.output_nodes) n->operands.clear();
    job.done.set_exception(std::current_exception());
  }
}

void sync_nodes(const std::vector<TraceNodePtr>& roots, const std::string& backend_name,
                bool full_sync) {
  State& s = state();
  auto job = std::make_shared<Job>();
  job->collected = collect(roots);
  Collected& c = job->collected;
  if (c.output_nodes.empty()) return;
  metrics::add_time("TensorsGraphSize", static_cast<int64_t>(c.graph.instrs.size()));
  std::string options = backend_name;  // LOOM_DECOMPOSE changes the compiled graph
  if (const char* d = std::getenv("LOOM_DECOMPOSE")) options += std::string(";decompose=") + d;
  if (const char* f = std::getenv("LOOM_FUSED_CE_MIN_CLASSES"))
    options += std::string(";fused_ce=") + f;
  Hash128 key = hash_combine(ir::graph_hash(c.graph), hash_string({1, 2}, options));
  job->program = compile(c, key, backends::backend_by_name(backend_name));
  job->backend = backend_name;
  std::shared_future<void> ready = job->done.get_future().share();
  // Internal nodes, held by shared_ptr: clearing one's operands may free others.
  std::vector<TraceNodePtr> internal;
  if (full_sync) {
    std::unordered_map<TraceNode*, bool> seen;
    for (auto& n : c.output_nodes) seen[n.get()] = true;
    std::vector<TraceNodePtr> stack(c.output_nodes.begin(), c.output_nodes.end());
    while (!stack.empty()) {
      TraceNodePtr n = std::move(stack.back());
      stack.pop_back();
      for (auto& o : n->operands) {
        if (seen[o.get()] || !o->is_pending()) continue;
        seen[o.get()] = true;
        internal.push_back(o);
        stack.push_back(o);
      }
    }
  }
  for (auto& n : c.output_nodes) n->ready = ready;
  if (full_sync) {
    release_and_find_donations(c, std::move(internal));
  } else {
    c.donatable.assign(c.input_nodes.size(), false);
  }
  s.pending = 0;
  s.executor.submit([job] { run_job(*job); });
}

// Waits for the tensor's value if it is in flight, then exposes its data.
void refresh(TensorImpl& impl) {
  if (!impl.node) return;
  if (impl.node->ready.valid()) impl.node->ready.get();  // rethrows executor errors
  if (impl.node->data) impl.data = impl.node->data;
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

Tensor trace_op(ops::OpKind op, const std::vector<Tensor>& inputs, const ops::Attrs& attrs,
                const ops::TensorType& type, const Device& device) {
  auto node = std::make_shared<TraceNode>();
  node->op = op;
  node->attrs = attrs;
  node->type = type;
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
void launch(const std::vector<Tensor>& tensors, bool full_sync) {
  std::vector<TraceNodePtr> roots;
  std::string backend = "cpu";
  for (const Tensor& t : tensors)
    if (t.defined() && t.device().is_lazy() && t.impl()->node && t.impl()->node->is_pending()) {
      roots.push_back(t.impl()->node);
      backend = t.device().backend;
    }
  if (!roots.empty()) sync_nodes(roots, backend, full_sync);
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
  launch(pending, true);  // returns once launched; values are waited for when read
  if (!s.executor.asynchronous()) s.executor.drain();
}

void wait() { state().executor.drain(); }

int64_t pending_nodes() { return state().pending; }

void clear_compile_cache() {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  s.cache.clear();
  s.tracker.clear();
  std::lock_guard<std::mutex> pool_lock(kept_pool().mu);
  kept_pool().free.clear();
}

}  // namespace loom::lazy
