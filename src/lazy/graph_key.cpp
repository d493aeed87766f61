// Hash: the compile-cache key of a collected graph. Device-data values are
// never part of it (ir::graph_hash hashes structure, shapes and dtypes).
#include <cstdlib>
#include <string>

#include "lazy/graph_executor.h"

namespace loom::lazy {

Hash128 graph_key(const ir::Graph& graph, std::string_view backend) {
  std::string options(backend);  // LOOM_DECOMPOSE changes the compiled graph
  if (const char* d = std::getenv("LOOM_DECOMPOSE")) options += std::string(";decompose=") + d;
  if (const char* f = std::getenv("LOOM_FUSED_CE_MIN_CLASSES"))
    options += std::string(";fused_ce=") + f;  // the fused LM-head pass threshold
  return hash_combine(ir::graph_hash(graph), hash_string({1, 2}, options));
}

}  // namespace loom::lazy
