// Executable::serialize / Backend::deserialize (backends/executable.h): the
// kernel backends serialize nothing and compile from the program ("" loads
// by compiling; other bytes are refused naming the backend); the xla backend
// serializes every stage's PJRT executable, and the loaded executable
// computes what the compiled one does without compiling (XlaCompile stays 0,
// no on-disk cache), for a one-stage program and one split at a collective.
// Damaged or foreign bytes are a loom::Error, never a run of another program.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/executable.h"
#include "backends/xla_test_util.h"
#include "common/error_of.h"
#include "common/scoped_env.h"
#include "compiler/program.h"
#include "ir/graph.h"
#include "loom/metrics.h"

namespace loom {
namespace {

using ProgramPtr = std::shared_ptr<const compiler::Program>;

ProgramPtr serialize_program(const std::string& text, bool fuse) {
  return std::make_shared<const compiler::Program>(compiler::lower(ir::parse(text), fuse));
}

const char* kNegGraph = "graph(%0: f32[2,3]) {\n  %1 = neg(%0) : f32[2,3]\n  return (%1)\n}\n";
// Two stages on xla: the all_reduce (one rank: the identity) splits it.
const char* kTwoStageGraph = R"(graph(%0: f32[4]) {
  %1 = mul(%0, %0) : f32[4]
  %2 = all_reduce(%1) reduce_op=0 : f32[4]
  %3 = add(%2, %0) : f32[4]
  return (%3, %1)
})";

// Runs `exe` on `host` (one input of `type`) and returns its outputs' values.
std::vector<std::vector<float>> serialize_run(const backends::Backend& b, backends::Executable& exe,
                                              const std::vector<float>& host,
                                              const ops::TensorType& type) {
  std::vector<BufferPtr> outs = exe.run({b.upload(host.data(), type, 0)}, {false});
  std::vector<std::vector<float>> values;
  for (const BufferPtr& o : outs) {
    std::vector<float> v(o->nbytes() / sizeof(float));
    b.copy_to_host(*o, v.data(), o->nbytes());
    values.push_back(v);
  }
  return values;
}

TEST(ExecutableSerialize, KernelBackendsSerializeNothingAndLoadByCompiling) {
  const backends::Backend& cpu = backends::backend_by_name("cpu");
  ProgramPtr p = serialize_program(kNegGraph, true);
  auto compiled = cpu.compile(p);
  EXPECT_EQ(compiled->serialize(), "");
  auto loaded = cpu.deserialize(p, "");
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(serialize_run(cpu, *loaded, x, {{2, 3}, DType::f32}),
            (std::vector<std::vector<float>>{{-1, -2, -3, -4, -5, -6}}));
  std::string e = testing::error_of([&] { cpu.deserialize(p, "junk"); });
  EXPECT_NE(e.find("[cpu] cannot load a serialized executable (4 bytes)"), std::string::npos) << e;
}

TEST(ExecutableSerialize, XlaLoadsEveryStageWithoutCompiling) {
  LOOM_REQUIRE_XLA();
  testing::ScopedEnv no_cache("LOOM_CACHE_DIR", std::nullopt);
  const backends::Backend& xla = backends::backend_by_name("xla");
  for (const char* text : {kNegGraph, kTwoStageGraph}) {
    ProgramPtr p = serialize_program(text, false);
    const ops::TensorType type = p->graph.inputs[0];
    std::vector<float> x(type.numel());
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.5f * static_cast<float>(i) - 1.0f;
    auto compiled = xla.compile(p);
    std::string bytes = compiled->serialize();
    ASSERT_GT(bytes.size(), 100u) << text;
    metrics::reset();
    auto loaded = xla.deserialize(p, bytes);
    EXPECT_EQ(metrics::counter("XlaCompile"), 0) << "deserialize compiled: " << text;
    EXPECT_EQ(serialize_run(xla, *loaded, x, type), serialize_run(xla, *compiled, x, type)) << text;
    // A loaded executable serializes to the bytes it came from (the CPU
    // plugin's own serialization of a loaded executable does not run), and
    // they load and run again.
    EXPECT_EQ(loaded->serialize(), bytes) << text;
    auto again = xla.deserialize(p, loaded->serialize());
    EXPECT_EQ(serialize_run(xla, *again, x, type), serialize_run(xla, *compiled, x, type)) << text;
  }
}

TEST(ExecutableSerialize, XlaRefusesDamagedOrForeignBytes) {
  LOOM_REQUIRE_XLA();
  testing::ScopedEnv no_cache("LOOM_CACHE_DIR", std::nullopt);
  const backends::Backend& xla = backends::backend_by_name("xla");
  ProgramPtr one = serialize_program(kNegGraph, false);
  ProgramPtr two = serialize_program(kTwoStageGraph, false);
  std::string bytes = xla.compile(two)->serialize();
  auto error = [&](const ProgramPtr& p, const std::string& b) {
    return testing::error_of([&] { xla.deserialize(p, b); });
  };
  EXPECT_NE(error(two, "loom-xla-stages 2\n1\n0\n").find("not loom-xla-stages 1 bytes"),
            std::string::npos);
  EXPECT_NE(error(two, bytes.substr(0, bytes.size() / 2)).find("runs past the end"),
            std::string::npos);
  EXPECT_NE(error(two, bytes + "x").find("trailing bytes"), std::string::npos);
  EXPECT_NE(error(two, "loom-xla-stages 1\n99999999999999999999\n").find("damaged length line"),
            std::string::npos);
  std::string e = error(one, bytes);  // the two-stage program's bytes for the one-stage one
  EXPECT_NE(e.find("[xla] cannot load a serialized executable: it has 2 stages, the program 1"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace loom
