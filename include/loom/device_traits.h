// DeviceTraits: what a device's backend says about the device — the questions
// code above lazy/ (the Trainer, the CLI, a front end) asks of a parsed
// loom::Device instead of looking at its name ("lazy:xla" prefixes).
// Implemented in src/lazy/dispatch.cpp, where devices meet the backend
// registry.
#pragma once

#include "loom/device.h"

namespace loom::lazy {

struct DeviceTraits {
  bool lazy = false;  ///< traced and compiled at mark_step (Device::is_lazy)
  /// Host code can read the bytes of its tensors (cpu, reference); false for
  /// a device with its own memory (lazy:sim, lazy:xla).
  bool host_memory = true;
  /// The backend's own compiler plans and holds device memory (lazy:xla: the
  /// PJRT plugin): loom's memory plan, arena and host-memory estimates do
  /// not describe it.
  bool plans_memory = false;
  bool native_bf16 = false;  ///< bf16 matmuls run on bf16 hardware
  int device_count = 1;      ///< devices of this backend (lazy:<backend>:<index>)
};

/// The traits of `device`'s backend. Throws what lazy::check_device throws
/// ("[device] lazy:sim:3: backend sim has 1 device(s)", "[backend] unknown
/// backend 'x' ...").
DeviceTraits device_traits(const Device& device);

}  // namespace loom::lazy
