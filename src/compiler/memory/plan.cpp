// plan_memory: live ranges -> in-place merges -> donation table -> arena
// offsets. See plan.h for the contract.
#include "compiler/memory/plan.h"

#include <algorithm>
#include <cstdio>

#include "compiler/memory/arena.h"

namespace loom::compiler::memory {
namespace {

class Planner {
 public:
  explicit Planner(const Program& p) : p_(p), g_(p.graph) {}

  MemoryPlan run() {
    init_values();
    live_ranges();
    merge_in_place();
    plan_donations();
    place();
    return std::move(plan_);
  }

 private:
  void init_values() {
    int n = g_.num_values();
    plan_.placement.assign(n, Placement::none);
    plan_.offset.assign(n, 0);
    plan_.first.assign(n, -1);
    plan_.last.assign(n, -1);
    plan_.donor.assign(n, -1);
    plan_.donated_to.assign(g_.inputs.size(), -1);
    is_output_.assign(n, false);
    for (int v : g_.outputs) is_output_[v] = true;
    for (int v = 0; v < static_cast<int>(g_.inputs.size()); ++v)
      plan_.placement[v] = Placement::input;
    buffer_of_.assign(n, -1);
  }

  void live_ranges() {
    for (int s = 0; s < static_cast<int>(p_.steps.size()); ++s) {
      const Step& step = p_.steps[s];
      for (int v : step.inputs) plan_.last[v] = std::max(plan_.last[v], s);
      for (int v : step.outputs) {
        plan_.first[v] = s;
        plan_.last[v] = std::max(plan_.last[v], s);
        plan_.placement[v] = is_output_[v] ? Placement::output : Placement::arena;
      }
    }
  }

  // Arena values become buffers; a fused step's output may join the buffer
  // of an arena input of the same type whose buffer ends at this step.
  void merge_in_place() {
    for (int s = 0; s < static_cast<int>(p_.steps.size()); ++s) {
      if (alias_reshape(s)) continue;
      for (int v : p_.steps[s].outputs)
        if (plan_.placement[v] == Placement::arena) assign_buffer(s, v);
    }
  }
  // A reshape of an arena value into an arena value needs no copy: buffers
  // are row-major and contiguous, so the output is the input's bytes. It
  // joins the input's buffer, whose end moves to the later of the two ends,
  // so nothing overwrites the bytes while either value is live.
  bool alias_reshape(int s) {
    const Step& step = p_.steps[s];
    if (step.fused || step.instr.op != ops::OpKind::k_reshape || step.inputs.size() != 1)
      return false;
    int w = step.inputs[0], v = step.outputs[0];
    if (plan_.placement[w] != Placement::arena || plan_.placement[v] != Placement::arena ||
        buffer_of_[w] < 0)
      return false;
    Buffer& b = buffers_[buffer_of_[w]];
    b.last = std::max(b.last, plan_.last[v]);
    buffer_of_[v] = buffer_of_[w];
    plan_.alias_steps.push_back(s);
    return true;
  }
  void assign_buffer(int s, int v) {
    const Step& step = p_.steps[s];
    int joined = -1;
    if (in_place_allowed(s, v)) {
      for (int w : step.inputs) {
        if (plan_.placement[w] != Placement::arena || g_.type_of(w) != g_.type_of(v)) continue;
        const Buffer& b = buffers_[buffer_of_[w]];
        if (b.last != s || b.taken_at == s) continue;  // still read later, or taken here
        joined = buffer_of_[w];
        plan_.in_place.push_back({s, v, w});
        break;
      }
    }
    if (joined < 0) {
      joined = static_cast<int>(buffers_.size());
      buffers_.push_back({s, s, g_.type_of(v).nbytes(), -1});
    }
    Buffer& b = buffers_[joined];
    b.last = std::max(b.last, plan_.last[v]);
    b.taken_at = s;
    buffer_of_[v] = joined;
  }
  // Fused elementwise outputs only; the reduction's result is excluded.
  bool in_place_allowed(int s, int v) const {
    const Step& step = p_.steps[s];
    return step.fused && !(step.group.has_reduce && v == step.outputs.back());
  }

  // Each graph output may take the buffer of one input of its type that is
  // dead by the time the output is written: read last at an earlier step,
  // or read last by the fused step that writes the output (in place).
  // Preference: an input read last by that very step (the tensor being
  // updated, like a parameter in its optimizer step), then the latest-read.
  void plan_donations() {
    std::vector<int> outputs;
    for (int v = 0; v < g_.num_values(); ++v)
      if (plan_.placement[v] == Placement::output) outputs.push_back(v);
    std::sort(outputs.begin(), outputs.end(),
              [&](int a, int b) { return plan_.first[a] < plan_.first[b]; });
    for (int v : outputs) {
      int s = plan_.first[v];
      bool in_place_ok = in_place_allowed(s, v);
      int best = -1;
      for (int i = 0; i < static_cast<int>(g_.inputs.size()); ++i) {
        if (plan_.donated_to[i] >= 0 || is_output_[i] || g_.type_of(i) != g_.type_of(v)) continue;
        int u = plan_.last[i];
        if (!(u < s || (u == s && in_place_ok))) continue;
        if (best < 0 || better_donor(i, best, s)) best = i;
      }
      if (best >= 0) {
        plan_.donor[v] = best;
        plan_.donated_to[best] = v;
        plan_.donated_bytes += g_.type_of(v).nbytes();
      } else {
        plan_.output_bytes += g_.type_of(v).nbytes();
      }
    }
  }
  bool better_donor(int i, int best, int s) const {
    bool here_i = plan_.last[i] == s, here_best = plan_.last[best] == s;
    if (here_i != here_best) return here_i;
    return plan_.last[i] > plan_.last[best];
  }

  void place() {
    std::vector<ArenaRequest> requests;
    for (const Buffer& b : buffers_) requests.push_back({b.first, b.last, b.nbytes});
    ArenaLayout layout = place_in_arena(requests);
    plan_.arena_bytes = layout.nbytes;
    for (int v = 0; v < g_.num_values(); ++v)
      if (buffer_of_[v] >= 0) plan_.offset[v] = layout.offset[buffer_of_[v]];
  }

  struct Buffer {
    int first, last;
    size_t nbytes;
    int taken_at;  // the last step that wrote a value into it
  };
  const Program& p_;
  const ir::Graph& g_;
  MemoryPlan plan_;
  std::vector<bool> is_output_;
  std::vector<int> buffer_of_;
  std::vector<Buffer> buffers_;
};

std::string mib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

MemoryPlan plan_memory(const Program& program) { return Planner(program).run(); }

std::string MemoryPlan::summary() const {
  return "arena " + mib(arena_bytes) + ", outputs " + mib(output_bytes) + ", donated " +
         mib(donated_bytes) + ", " + std::to_string(in_place.size()) + " in-place, " +
         std::to_string(alias_steps.size()) + " aliased";
}

}  // namespace loom::compiler::memory
