// Device: where tensor data lives and how ops run. `cpu` is eager (every op
// runs at once); `lazy` traces ops into an IR graph that runs at the next
// sync (mark_step). A device names the backend that runs its kernels:
// `cpu` = eager on the optimized cpu kernels, `cpu:reference` = eager on the
// plain-loop reference kernels (for tests), `lazy` = `lazy:cpu`.
#pragma once

#include <string>
#include <string_view>

namespace loom {

struct Device {
  enum class Kind { cpu, lazy };
  Kind kind = Kind::cpu;
  std::string backend = "cpu";  // the backend that runs kernels: "cpu" (later "cuda")

  Device() = default;
  /// Parses "cpu", "cpu:reference", "lazy", "lazy:cpu"; throws loom::Error
  /// "[device] unknown device 'x'" for anything else.
  Device(std::string_view spec);  // NOLINT(google-explicit-constructor): Device("lazy")
  Device(const char* spec) : Device(std::string_view(spec)) {}  // NOLINT
  bool is_lazy() const { return kind == Kind::lazy; }
  /// "cpu", "cpu:reference" or "lazy:cpu".
  std::string str() const;
  bool operator==(const Device&) const = default;
};

}  // namespace loom
