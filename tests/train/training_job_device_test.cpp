// The device as a value (issue 36 item 4): TrainingArguments parses its
// device once, where the text enters, and writes the name back as before
// (training_args.json); device_traits() answers what code above lazy/ asks
// instead of reading names; a tensor's backend is resolved when the tensor
// is made, and eager ops and host reads use that, not a lookup by name.
#include <gtest/gtest.h>

#include <string>

#include "backends/backend.h"
#include "common/error_of.h"
#include "lazy/tensor_impl.h"
#include "loom/device.h"
#include "loom/device_traits.h"
#include "loom/ops.h"
#include "loom/training_args.h"

namespace loom {
namespace {

TEST(DeviceValue, TrainingArgumentsParseOnceAndWriteTheNameBack) {
  TrainingArguments a;
  EXPECT_EQ(a.get("device"), "cpu");
  a.set("device", "lazy");
  EXPECT_TRUE(a.device.is_lazy());
  EXPECT_EQ(a.device.backend, "cpu");
  EXPECT_EQ(a.get("device"), "lazy");  // as before the field was a Device
  EXPECT_NE(a.to_json().find("\"device\": \"lazy\""), std::string::npos) << a.to_json();
  EXPECT_EQ(TrainingArguments::from_json(a.to_json()).device, Device("lazy"));
  a.set("device", "lazy:cpu:0");  // the same device
  EXPECT_EQ(a.get("device"), "lazy");
  a.set("device", "lazy:sim");
  EXPECT_EQ(a.get("device"), "lazy:sim");
  a.set("device", "cpu:reference");
  EXPECT_EQ(a.get("device"), "cpu:reference");
  // Bad text fails where it enters, with the message validate() gave before.
  // Bad text fails where it enters; PyTorch's accelerator names point to
  // lazy:xla, and only the devices a user picks from are listed (issue 42).
  EXPECT_EQ(std::string(testing::error_of([&] { a.set("device", "tpu"); })),
            "[TrainingArguments] device: unknown device 'tpu': XLA devices are lazy:xla: use "
            "lazy:xla with PJRT_DEVICE=TPU (or CUDA; docs/backends.md; devices: cpu, lazy (= "
            "lazy:cpu), lazy:xla[:<index>])");
  for (const char* gpu : {"cuda", "cuda:1", "gpu"}) {
    const std::string m = testing::error_of([&] { a.set("device", gpu); });
    EXPECT_NE(m.find(std::string("unknown device '") + gpu +
                     "': GPUs run through XLA: use lazy:xla with PJRT_DEVICE=CUDA"),
              std::string::npos)
        << m;
  }
  const std::string xla = testing::error_of([&] { a.set("device", "xla"); });
  EXPECT_NE(xla.find("use lazy:xla with PJRT_DEVICE=TPU"), std::string::npos) << xla;
  const std::string other = testing::error_of([&] { a.set("device", "foo"); });
  EXPECT_EQ(other,
            "[TrainingArguments] device: unknown device 'foo' (devices: cpu, lazy (= lazy:cpu), "
            "lazy:xla[:<index>])");
  for (const std::string& m : {xla, other}) {
    EXPECT_EQ(m.find("reference"), std::string::npos) << m;
    EXPECT_EQ(m.find("sim"), std::string::npos) << m;
    EXPECT_EQ(m.find("[device]"), std::string::npos) << m;  // one level, not nested
  }
  EXPECT_EQ(a.get("device"), "cpu:reference");  // unchanged
  // A well-formed name of a backend that does not exist: validate() names it.
  a.device = "lazy:nosuch";
  std::string msg = testing::error_of([&] { a.validate(); });
  EXPECT_EQ(msg,
            "[TrainingArguments] device: 'lazy:nosuch' is not a device (devices: cpu, lazy (= "
            "lazy:cpu), lazy:xla[:<index>])");
}

TEST(DeviceValue, TraitsComeFromTheBackend) {
  const lazy::DeviceTraits cpu = lazy::device_traits(Device("cpu"));
  EXPECT_FALSE(cpu.lazy);
  EXPECT_TRUE(cpu.host_memory);
  EXPECT_FALSE(cpu.plans_memory);
  const lazy::DeviceTraits lazy_cpu = lazy::device_traits(Device("lazy"));
  EXPECT_TRUE(lazy_cpu.lazy);
  EXPECT_TRUE(lazy_cpu.host_memory);
  const lazy::DeviceTraits sim = lazy::device_traits(Device("lazy:sim"));
  EXPECT_TRUE(sim.lazy);
  EXPECT_FALSE(sim.host_memory);
  EXPECT_FALSE(sim.plans_memory);
  EXPECT_EQ(sim.device_count, 1);
  EXPECT_NE(std::string(testing::error_of([] {
              lazy::device_traits(Device("lazy:sim:3"));
            })).find("[device] lazy:sim:3: backend sim has 1 device(s)"),
            std::string::npos);
}

TEST(DeviceValue, EagerTensorsCarryTheirResolvedBackend) {
  Tensor a = ones({3}, DType::f32, Device("cpu"));
  Tensor r = ones({3}, DType::f32, Device("cpu:reference"));
  ASSERT_NE(a.impl()->backend, nullptr);
  EXPECT_EQ(a.impl()->backend, &backends::backend_by_name("cpu"));
  EXPECT_EQ(r.impl()->backend, &backends::backend_by_name("reference"));
  Tensor sum = add(r, r);  // the operands' backend runs the op and owns the result
  EXPECT_EQ(sum.impl()->backend, &backends::backend_by_name("reference"));
  EXPECT_EQ(sum.to_vector<float>(), (std::vector<float>{2, 2, 2}));
  EXPECT_EQ(sum.detach().impl()->backend, sum.impl()->backend);
  Tensor moved = add(a, a).to(Device("cpu:reference"));
  EXPECT_EQ(moved.impl()->backend, &backends::backend_by_name("reference"));
}

}  // namespace
}  // namespace loom
