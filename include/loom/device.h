// Device: where tensor data lives and how ops run. `cpu` is eager (every op
// runs at once); `lazy` traces ops into an IR graph that runs at the next
// sync (mark_step). A device names the backend that runs its kernels and
// which of that backend's devices: `cpu` = eager on the optimized cpu
// kernels, `cpu:reference` = eager on the plain-loop reference kernels (for
// tests), `lazy` = `lazy:cpu` = `lazy:cpu:0`, `lazy:<backend>:<index>` in
// general (`lazy:sim`, later `lazy:cuda:1`). Parsing checks the form only;
// lazy::check_device checks the backend exists (the registry is above core).
#pragma once

#include <string>
#include <string_view>

namespace loom {

struct Device {
  enum class Kind { cpu, lazy };
  Kind kind = Kind::cpu;
  std::string backend = "cpu";  // the backend that runs kernels: "cpu", "sim" (later "cuda")
  int index = 0;                // which device of that backend

  Device() = default;
  /// Parses "cpu", "cpu:reference", "lazy", "lazy:<backend>" and
  /// "lazy:<backend>:<index>" (backend: lowercase letters and digits; index:
  /// a decimal integer >= 0); throws loom::Error "[device] unknown device
  /// 'x' (devices: ...)" for anything else (naming only the user-facing
  /// devices), and for cuda, gpu, xla or tpu one that points to lazy:xla
  /// with PJRT_DEVICE=CUDA or TPU.
  Device(std::string_view spec);  // NOLINT(google-explicit-constructor): Device("lazy")
  Device(const char* spec) : Device(std::string_view(spec)) {}  // NOLINT
  bool is_lazy() const { return kind == Kind::lazy; }
  /// "cpu", "cpu:reference", "lazy:<backend>", or "lazy:<backend>:<index>"
  /// when index > 0 (so "lazy" prints as "lazy:cpu").
  std::string str() const;
  bool operator==(const Device&) const = default;
};

}  // namespace loom
