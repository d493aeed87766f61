// The backend registry: one line per backend. Adding a backend is one
// folder under src/backends/ and one line here (docs/backends.md).
#include <string>

#include "backends/backend.h"
#include "loom/error.h"

namespace loom::backends {
namespace {

struct Entry {
  std::string_view name;
  const Backend& (*get)();
};

constexpr Entry kBackends[] = {
    {"cpu", cpu_backend},
    {"reference", reference_backend},
    {"sim", sim_backend},
    {"xla", xla_backend},
};

}  // namespace

std::vector<std::string_view> backend_names() {
  std::vector<std::string_view> names;
  for (const Entry& e : kBackends) names.push_back(e.name);
  return names;
}

const Backend& backend_by_name(std::string_view name) {
  for (const Entry& e : kBackends)
    if (e.name == name) return e.get();
  std::string expected;
  for (const Entry& e : kBackends) expected += (expected.empty() ? "" : ", ") + std::string(e.name);
  fail("[backend] unknown backend '", name, "' (expected ", expected, ")");
}

}  // namespace loom::backends
