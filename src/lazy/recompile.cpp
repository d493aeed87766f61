// Recompile causes: a diff between a new traced graph and the nearest one
// compiled before (fewest differing inputs and instrs).
#include "lazy/recompile.h"

#include <algorithm>
#include <sstream>

namespace loom::lazy {
namespace {

constexpr size_t kKeep = 64;
constexpr size_t kMaxReasons = 4;

std::vector<std::string> differences(const ir::Graph& old_g, const ir::Graph& new_g) {
  std::vector<std::string> out;
  size_t n_in = std::min(old_g.inputs.size(), new_g.inputs.size());
  for (size_t i = 0; i < n_in; ++i)
    if (!(old_g.inputs[i] == new_g.inputs[i]))
      out.push_back("input %" + std::to_string(i) + " shape " + ops::to_string(old_g.inputs[i]) +
                    " -> " + ops::to_string(new_g.inputs[i]));
  if (old_g.inputs.size() != new_g.inputs.size())
    out.push_back("number of inputs " + std::to_string(old_g.inputs.size()) + " -> " +
                  std::to_string(new_g.inputs.size()));
  size_t n = std::min(old_g.instrs.size(), new_g.instrs.size());
  int first = static_cast<int>(new_g.inputs.size());
  for (size_t i = 0; i < n; ++i) {
    const ir::Instr &a = old_g.instrs[i], &b = new_g.instrs[i];
    std::string where = "%" + std::to_string(first + i) + " ";
    if (a.op != b.op) {
      out.push_back(where + "op " + std::string(ops::op_name(a.op)) + " -> " +
                    std::string(ops::op_name(b.op)));
    } else if (!(a.attrs == b.attrs)) {
      out.push_back(where + std::string(ops::op_name(b.op)) + " constant/attributes '" +
                    ops::to_string(a.attrs) + "' -> '" + ops::to_string(b.attrs) + "'");
    } else if (a.operands != b.operands) {
      out.push_back(where + std::string(ops::op_name(b.op)) + " operands differ");
    }
  }
  if (old_g.instrs.size() != new_g.instrs.size())
    out.push_back("graph size " + std::to_string(old_g.instrs.size()) + " -> " +
                  std::to_string(new_g.instrs.size()) + " instrs");
  if (old_g.outputs.size() != new_g.outputs.size())
    out.push_back("number of outputs " + std::to_string(old_g.outputs.size()) + " -> " +
                  std::to_string(new_g.outputs.size()));
  return out;
}

}  // namespace

std::string RecompileTracker::explain(const ir::Graph& graph) const {
  if (seen_.empty()) return "";
  const Seen* best = nullptr;
  std::vector<std::string> best_diff;
  for (const Seen& s : seen_) {
    std::vector<std::string> d = differences(s.graph, graph);
    if (!best || d.size() < best_diff.size()) {
      best = &s;
      best_diff = std::move(d);
    }
  }
  std::ostringstream out;
  for (size_t i = 0; i < best_diff.size() && i < kMaxReasons; ++i)
    out << (i ? "; " : "") << best_diff[i];
  if (best_diff.size() > kMaxReasons) out << "; and " << best_diff.size() - kMaxReasons << " more";
  if (best_diff.empty()) out << "same structure as a cached graph that was evicted";
  out << " (nearest cached graph " << best->key.hex().substr(0, 12) << ")";
  return out.str();
}

void RecompileTracker::remember(const ir::Graph& graph, const Hash128& key) {
  for (const Seen& s : seen_)
    if (s.key == key) return;
  seen_.push_back({graph, key});
  if (seen_.size() > kKeep) seen_.pop_front();
}

}  // namespace loom::lazy
