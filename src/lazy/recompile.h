// RecompileTracker: remembers the traced graphs that were compiled and, for a
// new one, explains what differs from the nearest of them: which input's
// shape or dtype, which op or attribute (a constant), or the graph's size.
#pragma once

#include <deque>
#include <string>

#include "core/hash.h"
#include "ir/graph.h"

namespace loom::lazy {

class RecompileTracker {
 public:
  /// "" for the very first compile; else e.g. "input %2 shape f32[8,32] ->
  /// f32[8,16] (nearest cached graph 3fa2...)".
  std::string explain(const ir::Graph& graph) const;
  void remember(const ir::Graph& graph, const Hash128& key);
  void clear() { seen_.clear(); }

 private:
  struct Seen {
    ir::Graph graph;
    Hash128 key;
  };
  std::deque<Seen> seen_;  // most recent last; bounded
};

}  // namespace loom::lazy
