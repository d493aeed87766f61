// autocast_native (loom/autocast.h): asks the device's backend whether its
// matmuls run bf16 natively (Capabilities::native_bf16). Lives in lazy/
// because devices are resolved to backends here.
#include <cstdlib>
#include <string>

#include "backends/backend.h"
#include "loom/autocast.h"

namespace loom {

bool autocast_native(const Device& device, DType dtype) {
  const backends::Backend& backend = backends::backend_by_name(device.backend);
  if (const char* force = std::getenv("LOOM_AUTOCAST_NATIVE")) {
    std::string v(force);
    LOOM_CHECK(v == "0" || v == "1", "[autocast] LOOM_AUTOCAST_NATIVE must be 0 or 1, got '", v,
               "'");
    return v == "1";
  }
  if (dtype == DType::f32) return true;
  return dtype == DType::bf16 && backend.capabilities().native_bf16;
}

}  // namespace loom
