// Device parsing and printing.
#include "loom/device.h"

#include "loom/error.h"

namespace loom {

Device::Device(std::string_view spec) {
  if (spec == "cpu") return;
  if (spec == "cpu:reference") {  // eager, on the plain-loop oracle (tests)
    backend = "reference";
    return;
  }
  if (spec == "lazy" || spec == "lazy:cpu") {
    kind = Kind::lazy;
    return;
  }
  fail("[device] unknown device '", spec, "' (expected cpu, cpu:reference, lazy or lazy:cpu)");
}

std::string Device::str() const {
  if (kind == Kind::lazy) return "lazy:" + backend;
  return backend == "cpu" ? "cpu" : "cpu:" + backend;
}

}  // namespace loom
