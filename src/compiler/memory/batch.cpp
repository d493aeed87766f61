// plan_fused_batches: greedy runs of consecutive eligible fused steps, each
// new member checked against every member of the run for shared storage
// (batch.h gives the contract). Storage is compared by identity as the
// memory plan assigns it: arena byte ranges, graph inputs (read, or written
// through a donation), and fresh output buffers (unique per value).
#include "compiler/memory/batch.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "compiler/memory/arena.h"
#include "core/settings.h"

namespace loom::compiler::memory {
namespace {

// A run longer than this is cut (keeps the pairwise checks cheap).
constexpr int kMaxBatchMembers = 512;

enum class BatchStorageKind : uint8_t { arena, input, fresh };

// [begin, end) in the kind's space: arena bytes, input ids or value ids.
struct BatchStorage {
  BatchStorageKind kind;
  size_t begin, end;
  bool overlaps(const BatchStorage& o) const {
    return kind == o.kind && begin < o.end && o.begin < end;
  }
};

struct BatchMember {
  std::vector<BatchStorage> reads, writes;
};

class BatchPlanner {
 public:
  BatchPlanner(const Program& p, const MemoryPlan& plan) : p_(p), plan_(plan) {
    alias_.assign(p.steps.size(), false);
    for (int s : plan.alias_steps) alias_[s] = true;
  }

  std::vector<int> run(int min_members) {
    std::vector<int> out(p_.steps.size(), 1);
    std::vector<BatchMember> members;
    int start = 0;
    auto close = [&](int end) {  // the run is steps [start, end)
      if (static_cast<int>(members.size()) >= min_members) {
        out[start] = end - start;
        for (int s = start + 1; s < end; ++s) out[s] = 0;
      }
      members.clear();
    };
    for (int s = 0; s < static_cast<int>(p_.steps.size()); ++s) {
      if (!eligible(s)) {
        close(s);
        start = s + 1;
        continue;
      }
      BatchMember m = member_of(p_.steps[s]);
      if (static_cast<int>(members.size()) >= kMaxBatchMembers || conflicts(m, members)) {
        close(s);
        start = s;
      }
      members.push_back(std::move(m));
    }
    close(static_cast<int>(p_.steps.size()));
    return out;
  }

 private:
  bool eligible(int s) const {
    const Step& step = p_.steps[s];
    return step.fused && !step.group.has_reduce && !alias_[s] && !step.outputs.empty();
  }

  BatchStorage storage_of(int v) const {
    const ir::Graph& g = p_.graph;
    const size_t uv = static_cast<size_t>(v);
    switch (plan_.placement[v]) {
      case Placement::arena:
        return {BatchStorageKind::arena, plan_.offset[v],
                plan_.offset[v] + arena_round(g.type_of(v).nbytes())};
      case Placement::input:
        return {BatchStorageKind::input, uv, uv + 1};
      case Placement::output:
        if (plan_.donor[v] >= 0) {
          const size_t d = static_cast<size_t>(plan_.donor[v]);
          return {BatchStorageKind::input, d, d + 1};
        }
        return {BatchStorageKind::fresh, uv, uv + 1};
      case Placement::none:
        break;
    }
    return {BatchStorageKind::fresh, uv, uv + 1};
  }

  BatchMember member_of(const Step& step) const {
    BatchMember m;
    for (int v : step.inputs) m.reads.push_back(storage_of(v));
    for (int v : step.outputs) m.writes.push_back(storage_of(v));
    return m;
  }

  static bool batch_overlap(const std::vector<BatchStorage>& a,
                            const std::vector<BatchStorage>& b) {
    for (const BatchStorage& x : a)
      for (const BatchStorage& y : b)
        if (x.overlaps(y)) return true;
    return false;
  }

  static bool conflicts(const BatchMember& m, const std::vector<BatchMember>& members) {
    for (const BatchMember& o : members)
      if (batch_overlap(m.writes, o.reads) || batch_overlap(m.writes, o.writes) ||
          batch_overlap(m.reads, o.writes))
        return true;
    return false;
  }

  const Program& p_;
  const MemoryPlan& plan_;
  std::vector<bool> alias_;
};

}  // namespace

std::vector<int> plan_fused_batches(const Program& program, const MemoryPlan& plan,
                                    int min_members) {
  return BatchPlanner(program, plan).run(std::max(min_members, 2));
}

bool fused_batches_enabled() { return settings::flag(Setting::fused_batch); }

}  // namespace loom::compiler::memory
