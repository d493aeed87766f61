// Collect: the graph of the given roots, and which inputs can be donated.
#include <unordered_map>
#include <unordered_set>

#include "lazy/graph_executor.h"
#include "loom/error.h"

namespace loom::lazy {

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
      // A pending node without its operands cannot be computed: its recipe
      // was dropped by a full sync (release_and_find_donations) while
      // something still held it. Refused here, not left to the passes.
      const int arity = ops::op_arity(n->op);
      LOOM_CHECK(arity < 0 ? !n->operands.empty() : static_cast<int>(n->operands.size()) == arity,
                 "[lazy] internal: pending ", ops::op_name(n->op), " node has ", n->operands.size(),
                 " operands (its graph was released by an earlier mark_step)");
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
  std::unordered_map<int, int> remat_call;  // RematScope call -> 1, 2, ... in graph order
  for (TraceNode* n : order) {
    ir::Instr in{n->op, n->attrs, {}, n->type};
    if (n->remat > 0) {
      in.remat = remat_call.try_emplace(n->remat, static_cast<int>(remat_call.size()) + 1)
                     .first->second;  // canonical: the graph hash does not see the counter
    } else {
      in.remat = n->remat;
    }
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

namespace {
// The pending non-output nodes `keep`'s pending nodes reach (their recipes).
std::unordered_set<TraceNode*> collect_kept_recipes(const Collected& c,
                                                    const std::vector<TraceNodePtr>& keep) {
  std::unordered_set<TraceNode*> outputs, kept;
  for (auto& n : c.output_nodes) outputs.insert(n.get());
  std::vector<TraceNode*> stack;
  for (auto& n : keep) stack.push_back(n.get());
  while (!stack.empty()) {
    TraceNode* n = stack.back();
    stack.pop_back();
    // An output becomes device data: what lies below it is not needed again.
    if (!n->is_pending() || outputs.count(n) || !kept.insert(n).second) continue;
    for (auto& o : n->operands) stack.push_back(o.get());
  }
  return kept;
}
}  // namespace

// Held by shared_ptr: clearing one's operands may free others.
std::vector<TraceNodePtr> internal_nodes(const Collected& c,
                                         const std::vector<TraceNodePtr>& keep) {
  std::vector<TraceNodePtr> internal;
  std::unordered_map<TraceNode*, bool> seen;
  for (auto& n : c.output_nodes) seen[n.get()] = true;
  const std::unordered_set<TraceNode*> kept = collect_kept_recipes(c, keep);
  std::vector<TraceNodePtr> stack(c.output_nodes.begin(), c.output_nodes.end());
  while (!stack.empty()) {
    TraceNodePtr n = std::move(stack.back());
    stack.pop_back();
    for (auto& o : n->operands) {
      if (seen[o.get()] || !o->is_pending()) continue;
      seen[o.get()] = true;
      if (!kept.count(o.get())) internal.push_back(o);
      stack.push_back(o);
    }
  }
  return internal;
}

// After a full sync nothing can reach the collected graph's internal nodes:
// drop their operands, then an input nobody else holds can be donated (its
// buffer reused for the step's results, where the memory plan says so).
// The output nodes' operands go too: each output is in flight now (its
// `ready` is set, so no later collect walks into it) and becomes device data
// when the job ends (rebind_outputs). Kept, they held every input an output
// reads directly — exp_avg in AdamW's add(exp_avg, ...), a parameter without
// weight decay in add(param, ...) — so those were never donated, and each
// step allocated a second copy of that state.
void release_and_find_donations(Collected& c, std::vector<TraceNodePtr> internal) {
  for (const TraceNodePtr& n : internal) n->operands.clear();
  internal.clear();
  for (const TraceNodePtr& n : c.output_nodes) n->operands.clear();
  c.donatable.assign(c.input_nodes.size(), false);
  c.donatable_if_released.assign(c.input_nodes.size(), false);
  for (size_t i = 0; i < c.input_nodes.size(); ++i) {
    const TraceNodePtr& n = c.input_nodes[i];
    // Held only by c.input_nodes: no tensor, no other graph can read it again.
    // (An in-flight node's data is written by the executor thread: not read here.)
    c.donatable[i] = n.use_count() == 1 && (n->ready.valid() || n->data.use_count() == 1);
    // In flight: the previous step's job still holds its outputs (a step traced
    // while the last one runs, no host read between them). Decided when this
    // job runs (execute.cpp): nothing can take a new hold on a node that only
    // this job holds, so it is free then if it is free at all.
    c.donatable_if_released[i] = !c.donatable[i] && n->ready.valid();
  }
}

}  // namespace loom::lazy
