// run_eager: one-node programs cached per op signature (see eager.h).
#include "lazy/eager.h"

#include <cstdlib>
#include <mutex>

#include "backends/executable.h"
#include "compiler/program.h"
#include "core/settings.h"
#include "lazy/compile_cache.h"
#include "loom/metrics.h"

namespace loom::lazy {
namespace {

struct EagerCache {
  std::mutex mu;
  CompileCache cache{static_cast<size_t>(settings::integer(Setting::eager_cache_size))};
};
EagerCache& eager_cache() {
  static EagerCache* c = new EagerCache();  // never destroyed: ops may run at exit
  return *c;
}

std::shared_ptr<backends::Executable> executable_for(const backends::Backend& backend,
                                                     ops::OpKind op,
                                                     const std::vector<ops::TensorType>& types,
                                                     const ops::Attrs& attrs,
                                                     const ops::TensorType& out_type) {
  ir::Graph g;
  g.inputs = types;
  ir::Instr in{op, attrs, {}, out_type};
  for (int i = 0; i < static_cast<int>(types.size()); ++i) in.operands.push_back(i);
  g.instrs.push_back(std::move(in));
  g.outputs = {static_cast<int>(types.size())};
  Hash128 key = hash_combine(ir::graph_hash(g), hash_string({3, 4}, backend.name()));
  EagerCache& c = eager_cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (auto hit = c.cache.get(key)) {
      metrics::add_counter("EagerCachedCompile");
      return hit;
    }
  }
  auto exe = backend.compile(std::make_shared<compiler::Program>(compiler::lower(g, false)));
  metrics::add_counter("EagerCompile");
  std::lock_guard<std::mutex> lock(c.mu);
  c.cache.put(key, exe);
  return exe;
}

}  // namespace

BufferPtr run_eager(const backends::Backend& backend, ops::OpKind op, std::vector<BufferPtr> inputs,
                    const std::vector<ops::TensorType>& types, const ops::Attrs& attrs,
                    const ops::TensorType& out_type) {
  auto exe = executable_for(backend, op, types, attrs, out_type);
  std::vector<bool> donatable(inputs.size(), false);
  return exe->run(std::move(inputs), donatable)[0];
}

void clear_eager_cache() {
  EagerCache& c = eager_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.cache.clear();
}

}  // namespace loom::lazy
