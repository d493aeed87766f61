// The backend registry: one line per backend of src/backends/ (its folder
// is also one entry of CMakeLists.txt's LOOM_BACKENDS), then the backends a
// program registers itself (register_backend: tests/backends/null/). Adding
// a backend: docs/backends.md. The built-in lines name each folder's getter,
// so linking the static library always pulls every backend in.
#include <deque>
#include <mutex>
#include <string>

#include "backends/backend.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/reference/reference.h"
#include "backends/sim/sim_backend.h"
#include "backends/xla/xla_runtime.h"
#include "loom/error.h"

namespace loom::backends {
namespace {

struct Entry {
  std::string name;
  const Backend& (*get)();
};

// A function-local static, so a static initializer elsewhere
// (BackendRegistrar) never sees it half-built; a deque keeps entries put.
std::deque<Entry>& backend_entries() {
  static std::deque<Entry> kBuiltin = {
      {"cpu", []() -> const Backend& { return cpu_backend(); }},
      {"reference", []() -> const Backend& { return reference_backend(); }},
      {"sim", []() -> const Backend& { return sim_backend(); }},
      {"xla", xla_backend},
  };
  return kBuiltin;
}

std::mutex& backend_entries_mutex() {
  static std::mutex mu;
  return mu;
}

}  // namespace

std::vector<std::string_view> backend_names() {
  std::lock_guard<std::mutex> lock(backend_entries_mutex());
  std::vector<std::string_view> names;
  for (const Entry& e : backend_entries()) names.push_back(e.name);
  return names;
}

const Backend& backend_by_name(std::string_view name) {
  const Backend& (*get)() = nullptr;
  {
    std::lock_guard<std::mutex> lock(backend_entries_mutex());
    for (const Entry& e : backend_entries())
      if (e.name == name) {
        get = e.get;
        break;
      }
  }
  if (get != nullptr) return get();  // outside the lock: a backend may look another up
  std::string expected;
  for (std::string_view n : backend_names())
    expected += (expected.empty() ? "" : ", ") + std::string(n);
  fail("[backend] unknown backend '", name, "' (expected ", expected, ")");
}

void register_backend(std::string_view name, const Backend& (*get)()) {
  std::lock_guard<std::mutex> lock(backend_entries_mutex());
  for (const Entry& e : backend_entries())
    LOOM_CHECK(e.name != name, "[backend] register_backend: '", name, "' is already registered");
  LOOM_CHECK(get != nullptr, "[backend] register_backend: '", name, "' has no getter");
  backend_entries().push_back({std::string(name), get});
}

}  // namespace loom::backends
