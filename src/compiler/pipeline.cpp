// PassPipeline, the default pipeline and the shared replace_uses helper.
#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "compiler/pass.h"

namespace loom::compiler {

PassPipeline& PassPipeline::add(std::unique_ptr<Pass> pass) {
  passes_.push_back(std::move(pass));
  return *this;
}

namespace {
bool verify_between_passes() {
#ifndef NDEBUG
  return true;
#else
  const char* v = std::getenv("LOOM_VERIFY");
  return v && std::string(v) == "1";
#endif
}
}  // namespace

bool PassPipeline::run(ir::Graph& graph) const {
  const char* dump = std::getenv("LOOM_DUMP_IR");
  std::string prefix = dump ? std::string(dump) + "/" + ir::graph_hash(graph).hex() : "";
  bool verify = verify_between_passes();
  bool changed = false;
  int n = 0;
  for (const auto& pass : passes_) {
    changed = pass->run(graph) || changed;
    if (verify) ir::verify(graph);
    if (dump) {
      std::ofstream(prefix + "." + std::to_string(++n) + "." + std::string(pass->name()) + ".ir")
          << ir::to_text(graph);
    }
  }
  return changed;
}

PassPipeline default_pipeline(std::function<bool(ops::OpKind)> supported) {
  std::vector<ops::OpKind> forced = forced_decompositions();
  auto keep = [supported = std::move(supported), forced](ops::OpKind op) {
    return supported(op) && std::find(forced.begin(), forced.end(), op) == forced.end();
  };
  PassPipeline p;
  p.add(make_decompose(keep))
      .add(make_algebraic())
      .add(make_const_fold())
      .add(make_cse())
      .add(make_fused_cross_entropy(keep))
      .add(make_matmul_batch_sum())
      .add(make_cast_hoist())
      .add(make_matmul_layout())
      .add(make_index_add_fold())
      .add(make_dce())
      .add(make_remat())
      .add(make_collective_schedule());
  return p;
}

PassPipeline default_pipeline() {
  return default_pipeline([](ops::OpKind) { return true; });
}

void replace_uses(ir::Graph& graph, const std::vector<int>& replace) {
  auto resolve = [&](int v) {
    while (replace[v] != v) v = replace[v];
    return v;
  };
  for (ir::Instr& in : graph.instrs)
    for (int& v : in.operands) v = resolve(v);
  for (int& v : graph.outputs) v = resolve(v);
}

}  // namespace loom::compiler
