// Device parsing and printing: cpu, cpu:reference, lazy[:<backend>[:<index>]].
#include "loom/device.h"

#include <cctype>

#include "loom/error.h"

namespace loom {
namespace {

// The devices a user picks from, as the error lists them (cpu:reference and
// lazy:sim exist for tests); training_args_validate.cpp lists the same.
constexpr const char* kUserDevices = "cpu, lazy (= lazy:cpu), lazy:xla[:<index>]";

bool is_name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::islower(static_cast<unsigned char>(c)) ||
          std::isdigit(static_cast<unsigned char>(c))))
      return false;
  return true;
}

bool parse_index(std::string_view s, int* out) {
  if (s.empty() || s.size() > 6) return false;
  int v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

// PyTorch's names for an accelerator, before any ":<index>".
bool is_torch_gpu_name(std::string_view base) { return base == "cuda" || base == "gpu"; }
bool is_torch_xla_name(std::string_view base) { return base == "xla" || base == "tpu"; }

// loom runs NVIDIA GPUs and TPUs through XLA's PJRT plugins (docs/backends.md).
[[noreturn]] void bad_device(std::string_view spec) {
  const std::string_view base = spec.substr(0, spec.find(':'));
  if (is_torch_gpu_name(base))
    fail("[device] unknown device '", spec,
         "': GPUs run through XLA: use lazy:xla with PJRT_DEVICE=CUDA (docs/backends.md; "
         "devices: ",
         kUserDevices, ")");
  if (is_torch_xla_name(base))
    fail("[device] unknown device '", spec,
         "': XLA devices are lazy:xla: use lazy:xla with PJRT_DEVICE=TPU (or CUDA; "
         "docs/backends.md; devices: ",
         kUserDevices, ")");
  fail("[device] unknown device '", spec, "' (devices: ", kUserDevices, ")");
}

}  // namespace

Device::Device(std::string_view spec) {
  if (spec == "cpu") return;
  if (spec == "cpu:reference") {  // eager, on the plain-loop oracle (tests)
    backend = "reference";
    return;
  }
  if (spec == "lazy") {
    kind = Kind::lazy;
    return;
  }
  if (spec.substr(0, 5) != "lazy:") bad_device(spec);
  std::string_view rest = spec.substr(5);
  size_t colon = rest.find(':');
  std::string_view name = rest.substr(0, colon);
  if (!is_name(name)) bad_device(spec);
  if (colon != std::string_view::npos && !parse_index(rest.substr(colon + 1), &index))
    bad_device(spec);
  kind = Kind::lazy;
  backend = std::string(name);
}

std::string Device::str() const {
  std::string out = kind == Kind::lazy ? "lazy:" : "cpu";
  if (kind == Kind::lazy) {
    out += backend;
    if (index) out += ':' + std::to_string(index);
  } else if (backend != "cpu") {
    out += ':' + backend;
  }
  return out;
}

}  // namespace loom
