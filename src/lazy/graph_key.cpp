// Hash: the compile-cache key of a collected graph. Device-data values are
// never part of it (ir::graph_hash hashes structure, shapes and dtypes).
#include <cstdlib>
#include <string>

#include "lazy/graph_executor.h"

namespace loom::lazy {

namespace {

// Bumped when the pass pipeline changes what a graph compiles to in a way a
// cached executable would not show (e.g. the collectives it issues: every
// rank must run the same ones), so entries of older binaries miss.
constexpr const char* kPipelineVersion = "2026-12-02";

// The environment switches that change the compiled program.
constexpr const char* kCompileSwitches[] = {"LOOM_DECOMPOSE",       "LOOM_FUSED_CE_MIN_CLASSES",
                                            "LOOM_GATHER_SCHEDULE", "LOOM_FUSED_BATCH",
                                            "LOOM_MATMUL_LAYOUT",   "LOOM_XLA_DONATE"};

}  // namespace

Hash128 graph_key(const ir::Graph& graph, std::string_view backend) {
  std::string options(backend);
  options += std::string(";pipeline=") + kPipelineVersion;
  for (const char* name : kCompileSwitches)
    if (const char* v = std::getenv(name)) options += std::string(";") + name + "=" + v;
  return hash_combine(ir::graph_hash(graph), hash_string({1, 2}, options));
}

}  // namespace loom::lazy
