// autocast_native (loom/autocast.h): asks the device's backend whether its
// matmuls run bf16 natively (Capabilities::native_bf16). Lives in lazy/
// because devices are resolved to backends here.
#include <cstdlib>
#include <string>

#include "backends/backend.h"
#include "core/settings.h"
#include "loom/autocast.h"

namespace loom {

bool autocast_native(const Device& device, DType dtype) {
  const backends::Backend& backend = backends::backend_by_name(device.backend);
  const std::string& force = settings::text(Setting::autocast_native);  // "", "0" or "1"
  if (!force.empty()) return force == "1";
  if (dtype == DType::f32) return true;
  return dtype == DType::bf16 && backend.capabilities().native_bf16;
}

}  // namespace loom
