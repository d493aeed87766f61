// plan_memory: live ranges -> in-place merges -> donation table -> arena
// offsets. See plan.h for the contract.
#include "compiler/memory/plan.h"

#include <algorithm>
#include <cstdio>

#include "compiler/memory/arena.h"
#include "loom/error.h"

namespace loom::compiler::memory {
namespace {

class Planner {
 public:
  explicit Planner(const Program& p) : p_(p), g_(p.graph) {}

  MemoryPlan run() {
    init_values();
    live_ranges();
    view_reads();
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
    view_offset_.assign(n, 0);
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
    // A started all_gather / reduce_scatter reads its operand until its
    // wait, which may be after the last step (n: a graph output only the
    // caller reads). all_reduce copies its operand into its output at the
    // start and reduces that in place.
    const int n = static_cast<int>(p_.steps.size());
    for (int s = 0; s < n; ++s) {
      if (!collective_reads_operand_until_wait(p_.steps[s])) continue;
      int wait = collective_wait_step(p_, s, !is_output_[p_.steps[s].outputs[0]]);
      for (int v : p_.steps[s].inputs) plan_.last[v] = std::max(plan_.last[v], wait);
    }
  }

  // Which steps will be views (alias_view), and per value the byte ranges
  // that kernels read after it is written: its own bytes through the last
  // non-view step reading it (a collective's until its wait), and those of
  // every view taken of it, at their offsets. A view step reads no bytes.
  void view_reads() {
    const int n = static_cast<int>(p_.steps.size());
    view_step_.assign(n, false);
    view_start_.assign(n, 0);
    std::vector<int> kernel_last(g_.num_values(), -1);
    for (int s = 0; s < n; ++s) {
      const Step& step = p_.steps[s];
      view_step_[s] = is_view_step(step, &view_start_[s]);
      if (view_step_[s]) continue;
      int end = s;
      if (collective_reads_operand_until_wait(step))
        end = std::max(s, collective_wait_step(p_, s, !is_output_[step.outputs[0]]));
      for (int v : step.inputs) kernel_last[v] = std::max(kernel_last[v], end);
    }
    reads_.assign(g_.num_values(), {});
    for (int v = 0; v < g_.num_values(); ++v)
      if (kernel_last[v] >= 0) reads_[v].push_back({0, g_.type_of(v).nbytes(), kernel_last[v]});
    for (int s = n - 1; s >= 0; --s) {  // a view's reads are its input's, shifted
      if (!view_step_[s]) continue;
      int w = p_.steps[s].inputs[0], v = p_.steps[s].outputs[0];
      for (ByteRead r : reads_[v])
        reads_[w].push_back({r.lo + view_start_[s], r.hi + view_start_[s], r.last});
    }
  }
  bool is_view_step(const Step& step, size_t* offset) const {
    if (step.fused || step.inputs.size() != 1) return false;
    bool reshape = step.instr.op == ops::OpKind::k_reshape;
    if (!reshape && !view_bytes(step, offset)) return false;
    return plan_.placement[step.inputs[0]] == Placement::arena &&
           plan_.placement[step.outputs[0]] == Placement::arena;
  }

  // Arena values become buffers; a fused step's output may join the buffer
  // of an arena input of the same type whose buffer ends at this step.
  void merge_in_place() {
    for (int s = 0; s < static_cast<int>(p_.steps.size()); ++s) {
      if (alias_view(s)) continue;
      for (int v : p_.steps[s].outputs)
        if (plan_.placement[v] == Placement::arena) assign_buffer(s, v);
    }
  }
  // A reshape of an arena value into an arena value needs no copy: buffers
  // are row-major and contiguous, so the output is the input's bytes. So is
  // a contiguous slice (view_bytes): its output is a run of the input's
  // bytes at an offset. The view joins the input's buffer, whose end moves
  // to the later of the two ends, so nothing overwrites the bytes while
  // either value is live.
  bool alias_view(int s) {
    const Step& step = p_.steps[s];
    if (!view_step_[s]) return false;
    int w = step.inputs[0], v = step.outputs[0];
    bool reshape = step.instr.op == ops::OpKind::k_reshape;
    // w is an arena value written earlier, so it has a buffer.
    if (buffer_of_[w] < 0)
      throw Error("[memory plan] view %" + std::to_string(v) + " of %" + std::to_string(w) +
                  ", which has no buffer");
    Buffer& b = buffers_[buffer_of_[w]];
    b.last = std::max(b.last, plan_.last[v]);
    buffer_of_[v] = buffer_of_[w];
    b.members.push_back(v);
    view_offset_[v] = view_offset_[w] + view_start_[s];
    b.sliced = b.sliced || !reshape;
    plan_.alias_steps.push_back(s);
    return true;
  }
  // A slice with step 1 whose axes before `axis` all have size 1 (e.g. rows
  // of a matrix: the fused LM head's packed [dW; dH; loss] output, split
  // along axis 0) is one contiguous run of its input; *offset = its first
  // byte, kept a multiple of kArenaAlign so kernels see aligned data.
  bool view_bytes(const Step& step, size_t* offset) const {
    const ir::Instr& in = step.instr;
    if (in.op != ops::OpKind::k_slice || in.attrs.step != 1) return false;
    const ops::TensorType& t = g_.type_of(step.inputs[0]);
    int64_t axis = in.attrs.axis, inner = 1;
    for (int64_t d = 0; d < axis; ++d)
      if (t.shape[d] != 1) return false;
    for (size_t d = axis + 1; d < t.shape.size(); ++d) inner *= t.shape[d];
    *offset = static_cast<size_t>(in.attrs.start * inner) * dtype_size(t.dtype);
    return *offset % kArenaAlign == 0;
  }
  void assign_buffer(int s, int v) {
    const Step& step = p_.steps[s];
    int joined = -1;
    if (in_place_allowed(s, v)) {
      for (int w : step.inputs) {
        if (plan_.placement[w] != Placement::arena || g_.type_of(w) != g_.type_of(v)) continue;
        if (!step.fused && !writable_operand_zero(step, w)) continue;  // index_add/copy
        const Buffer& b = buffers_[buffer_of_[w]];
        if (b.taken_at == s) continue;  // another output of this step took it
        if (b.sliced ? !view_free_after(step, s, w) : b.last != s) continue;  // read later
        joined = buffer_of_[w];
        view_offset_[v] = view_offset_[w];  // w may be a view into its buffer
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
    b.members.push_back(v);
    buffer_of_[v] = joined;
  }
  // A buffer holding slice views may be written in place through view `w`
  // at step `s` when `w` dies here, no other input of the step lies in the
  // buffer (a second view could overlap the bytes written: rows [8, 24)
  // written while rows [0, 16) are read), and no kernel reads `w`'s bytes
  // after `s` through any value in the buffer or any view still to be taken
  // of one (reads_). So the fused LM head's dW rows take the tied
  // embedding's index_add while its dH and loss rows are read later: no
  // second [V, C].
  bool view_free_after(const Step& step, int s, int w) const {
    if (plan_.last[w] != s) return false;
    const Buffer& b = buffers_[buffer_of_[w]];
    for (int u : step.inputs)
      if (u != w && buffer_of_[u] == buffer_of_[w]) return false;
    size_t lo = view_offset_[w], hi = lo + g_.type_of(w).nbytes();
    for (int u : b.members) {
      if (u == w) continue;
      for (const ByteRead& r : reads_[u])
        if (r.last > s && view_offset_[u] + r.lo < hi && lo < view_offset_[u] + r.hi) return false;
    }
    return true;
  }
  // An index_add / index_copy writes over operand 0 only (`w`), and only
  // when no other operand reads its bytes: the kernels read the source
  // while they write the output, so index_copy(x, 0, idx, x) or a source
  // sharing x's buffer (a reshape alias) must not be written over.
  bool writable_operand_zero(const Step& step, int w) const {
    if (step.inputs.empty() || step.inputs[0] != w) return false;
    for (size_t k = 1; k < step.inputs.size(); ++k) {
      int u = step.inputs[k];
      if (u == w || (buffer_of_[u] >= 0 && buffer_of_[u] == buffer_of_[w])) return false;
    }
    return true;
  }
  // Fused elementwise outputs, the reduction's result excluded; an
  // index_add over its base (an embedding's gradient, [V, C], scattered
  // into zeros): its kernels read the base before they write the output
  // (backends/cpu/index.cpp, reference/index.cpp), and a base that dies
  // here needs no second [V, C]; and an index_copy over its self (a KV
  // cache buffer, donated each decode step): the cpu kernel then writes
  // only the indexed slices, the reference reads self before it writes.
  bool in_place_allowed(int s, int v) const {
    const Step& step = p_.steps[s];
    if (!step.fused)
      return step.instr.op == ops::OpKind::k_index_add ||
             step.instr.op == ops::OpKind::k_index_copy;
    return !(step.group.has_reduce && v == step.outputs.back());
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
        if (u == s && !p_.steps[s].fused && !writable_operand_zero(p_.steps[s], i)) continue;
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
      if (buffer_of_[v] >= 0) plan_.offset[v] = layout.offset[buffer_of_[v]] + view_offset_[v];
  }

  struct Buffer {
    int first, last;
    size_t nbytes;
    int taken_at;              // the last step that wrote a value into it
    bool sliced = false;       // holds slice views: written in place only by view_free_after
    std::vector<int> members;  // the values placed in it (views at their view_offset_)
  };
  struct ByteRead {
    size_t lo, hi;  // bytes [lo, hi) from the value's first byte
    int last;       // the last step whose kernel reads them
  };
  const Program& p_;
  const ir::Graph& g_;
  MemoryPlan plan_;
  std::vector<bool> view_step_;     // per step: a reshape / contiguous slice run as a view
  std::vector<size_t> view_start_;  // per step: a view's first byte in its input
  std::vector<std::vector<ByteRead>> reads_;  // per value: see view_reads()
  std::vector<bool> is_output_;
  std::vector<int> buffer_of_;
  std::vector<size_t> view_offset_;  // per value: bytes into its buffer (slice views)
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
