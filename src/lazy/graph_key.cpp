// Hash: the compile-cache key of a collected graph. Device-data values are
// never part of it (ir::graph_hash hashes structure, shapes and dtypes).
#include <string>

#include "core/settings.h"
#include "lazy/graph_executor.h"

namespace loom::lazy {

namespace {

// Bumped when the pass pipeline changes what a graph compiles to in a way a
// cached executable would not show (e.g. the collectives it issues: every
// rank must run the same ones), so entries of older binaries miss.
constexpr const char* kPipelineVersion = "2026-12-02";

}  // namespace

Hash128 graph_key(const ir::Graph& graph, std::string_view backend) {
  std::string options(backend);
  options += std::string(";pipeline=") + kPipelineVersion;
  // The settings that change the compiled program (settings.def's kCompiled
  // rows), as set: none set adds nothing, so the default key stays the same.
  for (const settings::Info& in : settings::table())
    if (in.effect == settings::kCompiled)
      if (const auto& v = settings::raw(in.id)) options += std::string(";") + in.name + "=" + *v;
  return hash_combine(ir::graph_hash(graph), hash_string({1, 2}, options));
}

}  // namespace loom::lazy
