// device_traits (loom/device_traits.h): a device's backend, asked once, in
// the terms code above lazy/ needs. Assumes backends/backend.h's registry.
#include "loom/device_traits.h"

#include "backends/backend.h"
#include "loom/lazy.h"

namespace loom::lazy {

DeviceTraits device_traits(const Device& device) {
  check_device(device);
  const backends::Backend& b = backends::backend_by_name(device.backend);
  const backends::Capabilities caps = b.capabilities();
  DeviceTraits t;
  t.lazy = device.is_lazy();
  t.host_memory = b.host_visible();
  t.plans_memory = caps.plans_itself;
  t.native_bf16 = caps.native_bf16;
  t.device_count = b.device_count();
  return t;
}

}  // namespace loom::lazy
