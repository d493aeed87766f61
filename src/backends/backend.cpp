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
