// Backend::run and the backend registry.
#include "backends/backend.h"

#include "loom/error.h"

namespace loom::backends {

void Backend::run(const OpCall& call) const {
  Kernel k = kernel(call.op);
  LOOM_CHECK(k != nullptr, "[", ops::op_name(call.op), "] not supported by backend ", name());
  k(call);
}

const Backend& backend_by_name(std::string_view name) {
  if (name == "reference") return reference_backend();
  if (name == "cpu") return cpu_backend();
  fail("[backend] unknown backend '", name, "' (expected reference or cpu)");
}

}  // namespace loom::backends

namespace loom::backends {

void Backend::run_fused(const FusedCall& call) const {
  const compiler::FusedGroup& g = *call.group;
  std::vector<std::vector<std::byte>> temps(g.body.size());
  std::vector<ConstView> values(call.inputs);
  for (size_t k = 0; k < g.body.size(); ++k) {
    const compiler::FusedOp& op = g.body[k];
    temps[k].resize(op.type.nbytes());
    OpCall c{op.op, &op.attrs, {}, {temps[k].data(), op.type}};
    for (int a : op.args) c.inputs.push_back(values[a]);
    run(c);
    values.push_back({temps[k].data(), op.type});
  }
  if (g.has_reduce) {  // reads the temporaries only, so it may run first
    const compiler::FusedReduce& r = g.reduce;
    run(OpCall{r.op, &r.attrs, {values[g.num_inputs() + r.arg]}, call.outputs.back()});
  }
  for (size_t o = 0; o < g.outputs.size(); ++o) {
    const auto& t = temps[g.outputs[o]];
    std::copy(t.begin(), t.end(), static_cast<std::byte*>(call.outputs[o].data));
  }
}

}  // namespace loom::backends
