// The lazy cycle: trace -> sync (collect live pending tensors, post-order,
// hash) -> compile on a cache miss (passes, lowering) -> execute -> rebind.
// Named steps follow PyTorch's LazyGraphExecutor.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <unordered_map>

#include "backends/backend.h"
#include "compiler/pass.h"
#include "lazy/compile_cache.h"
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
};
State& state() {
  static State s;
  return s;
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
  std::vector<BufferPtr> input_data;
  std::vector<TraceNodePtr> output_nodes;
};

Collected collect(const std::vector<TraceNodePtr>& roots) {
  Collected c;
  std::unordered_map<TraceNode*, int> id;
  std::unordered_map<const void*, int> input_of_buffer;
  std::vector<TraceNode*> order;  // post-order of pending nodes
  std::vector<std::pair<TraceNode*, size_t>> stack;
  for (const TraceNodePtr& r : roots) {
    if (id.count(r.get())) continue;
    stack.push_back({r.get(), 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (n->data) {  // device data: a graph input, deduped by buffer
        auto [it, fresh] = input_of_buffer.try_emplace(n->data.get(), (int)c.graph.inputs.size());
        if (fresh) {
          c.graph.inputs.push_back(n->type);
          c.input_data.push_back(n->data);
        }
        id[n] = -1 - it->second;  // provisional: inputs are numbered first
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
    for (const TraceNodePtr& o : n->operands) in.operands.push_back(value_of(o.get()));
    c.graph.instrs.push_back(std::move(in));
  }
  for (const TraceNodePtr& r : roots) {
    if (r->data) continue;
    c.graph.outputs.push_back(value_of(r.get()));
    c.output_nodes.push_back(r);
  }
  return c;
}

// ---- compile ----
std::shared_ptr<const compiler::Program> compile(const Collected& c, const Hash128& key) {
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
    compiler::default_pipeline().run(g);
    optimized = std::move(g);
    disk_cache_store(key, *optimized);
  }
  s.tracker.remember(c.graph, key);
  auto program = std::make_shared<compiler::Program>(compiler::lower(*optimized, true));
  metrics::add_time("CompileTime", ns_since(t0));
  s.cache.put(key, program);
  return program;
}

// ---- execute ----
std::vector<BufferPtr> execute(const compiler::Program& p, std::vector<BufferPtr> inputs,
                               const backends::Backend& backend) {
  auto t0 = Clock::now();
  const ir::Graph& g = p.graph;
  std::vector<BufferPtr> slots(g.num_values());
  for (size_t i = 0; i < inputs.size(); ++i) slots[i] = std::move(inputs[i]);
  for (const compiler::Step& step : p.steps) {
    if (step.fused) {
      backends::FusedCall call{&step.group, {}, {}};
      for (int v : step.inputs) call.inputs.push_back({slots[v]->data(), g.type_of(v)});
      for (int v : step.outputs) {
        slots[v] = make_buffer(g.type_of(v).nbytes());
        call.outputs.push_back({slots[v]->data(), g.type_of(v)});
      }
      backend.run_fused(call);
    } else {
      int v = step.outputs[0];
      backends::OpCall call{step.instr.op, &step.instr.attrs, {}, {}};
      for (int a : step.inputs) call.inputs.push_back({slots[a]->data(), g.type_of(a)});
      slots[v] = make_buffer(step.instr.type.nbytes());
      call.output = {slots[v]->data(), step.instr.type};
      backend.run(call);
    }
    for (int v : step.free_after) slots[v].reset();
  }
  std::vector<BufferPtr> outputs;
  for (int v : g.outputs) outputs.push_back(slots[v]);
  metrics::add_time("ExecuteTime", ns_since(t0));
  metrics::add_counter("ExecuteCount");
  return outputs;
}

void sync_nodes(std::vector<TraceNodePtr> roots, const std::string& backend_name) {
  State& s = state();
  Collected c = collect(roots);
  if (c.output_nodes.empty()) return;
  metrics::add_time("TensorsGraphSize", static_cast<int64_t>(c.graph.instrs.size()));
  Hash128 key = hash_combine(ir::graph_hash(c.graph), hash_string({1, 2}, backend_name));
  auto program = compile(c, key);
  std::vector<BufferPtr> outputs =
      execute(*program, c.input_data, backends::backend_by_name(backend_name));
  for (size_t i = 0; i < c.output_nodes.size(); ++i) {
    TraceNode& n = *c.output_nodes[i];
    n.data = outputs[i];
    n.operands.clear();
  }
  s.pending = 0;
}

void refresh(TensorImpl& impl) {
  if (impl.node && impl.node->data) impl.data = impl.node->data;
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
  if (!impl.node->data) {
    metrics::add_counter("EarlySync");
    sync({t});
  }
  refresh(impl);
  metrics::add_counter("OutboundData", static_cast<int64_t>(impl.type.nbytes()));
}

void sync(const std::vector<Tensor>& tensors) {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  std::vector<TraceNodePtr> roots;
  std::string backend = "cpu";
  for (const Tensor& t : tensors)
    if (t.defined() && t.device().is_lazy() && t.impl()->node && !t.impl()->node->data) {
      roots.push_back(t.impl()->node);
      backend = t.device().backend;
    }
  if (!roots.empty()) sync_nodes(roots, backend);
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
    if (!impl || !impl->node) continue;
    if (!impl->node->data) {
      pending.push_back(Tensor(impl));
    } else {
      refresh(*impl);
    }
  }
  s.live.clear();
  sync(pending);
}

int64_t pending_nodes() { return state().pending; }

void clear_compile_cache() {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  s.cache.clear();
  s.tracker.clear();
}

}  // namespace loom::lazy
