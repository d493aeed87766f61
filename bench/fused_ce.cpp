// bench/fused_ce — the language-model head of a training step, on the cpu
// backend's kernels: the unfused sequence (logits matmul, cross_entropy,
// cross_entropy_backward, the two matmul gradients; every [N, V] buffer
// materialized) against the one fused_linear_cross_entropy kernel that the
// fused_cross_entropy pass substitutes, in f32 and bf16 (autocast's
// operands). Shapes default to the demo model: N = 8 x 128 tokens, D = 256,
// V = 50257. Reports ms per head and GFLOP/s over the three GEMMs
// (3 x 2 N D V flops).
//
//   ./build/bench_fused_ce --benchmark_min_time=2
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/kernel_backend.h"
#include "loom/parallel.h"
#include "ops/infer.h"

namespace {

using loom::DType;
using loom::backends::OpCall;
using loom::ops::OpKind;
using loom::ops::TensorType;

constexpr int64_t kN = 1024, kD = 256, kV = 50257;

// A value of the head: its type and a buffer.
struct Value {
  TensorType type;
  std::vector<char> bytes;
  void* data() { return bytes.data(); }
};

Value make(TensorType t) {
  Value v{t, std::vector<char>(std::max<size_t>(64, t.nbytes()))};
  return v;
}

Value random_floats(const loom::Shape& s, DType dtype, uint32_t seed) {
  Value v = make({s, dtype});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-0.1f, 0.1f);
  for (int64_t i = 0; i < v.type.numel(); ++i) {
    float x = u(rng);
    if (dtype == DType::f32) {
      std::memcpy(v.bytes.data() + 4 * i, &x, 4);
    } else {  // bf16: the high half (truncation is fine for random data)
      uint32_t bits;
      std::memcpy(&bits, &x, 4);
      uint16_t hi = static_cast<uint16_t>(bits >> 16);
      std::memcpy(v.bytes.data() + 2 * i, &hi, 2);
    }
  }
  return v;
}

Value run(OpKind op, const loom::ops::Attrs& a, std::vector<Value*> in) {
  std::vector<TensorType> types;
  for (Value* v : in) types.push_back(v->type);
  Value out = make(loom::ops::infer_type(op, types, a));
  OpCall call{op, &a, {}, {out.data(), out.type}};
  for (Value* v : in) call.inputs.push_back({v->data(), v->type});
  loom::backends::cpu_backend().run(call);
  return out;
}

struct Head {
  Value h, w, target, grad;
  explicit Head(DType dtype)
      : h(random_floats({kN, kD}, dtype, 1)),
        w(random_floats({kV, kD}, dtype, 2)),
        target(make({{kN}, DType::i64})),
        grad(make({{}, DType::f32})) {
    for (int64_t i = 0; i < kN; ++i)
      reinterpret_cast<int64_t*>(target.data())[i] = i % 9 == 0 ? -100 : (i * 7919) % kV;
    float one = 1.0f;
    std::memcpy(grad.data(), &one, 4);
  }
};

void BM_Unfused(benchmark::State& state, DType dtype) {
  Head hd(dtype);
  loom::ops::Attrs ce, tb, ta, none, to_f32, to_low;
  ce.ignore_index = -100;
  tb.trans_b = true;
  ta.trans_a = true;
  to_f32.dtype = DType::f32;
  to_low.dtype = dtype;
  for (auto _ : state) {
    Value z = run(OpKind::k_matmul, tb, {&hd.h, &hd.w});
    if (dtype != DType::f32) z = run(OpKind::k_cast, to_f32, {&z});
    Value loss = run(OpKind::k_cross_entropy, ce, {&z, &hd.target});
    Value dz = run(OpKind::k_cross_entropy_backward, ce, {&z, &hd.target, &hd.grad});
    if (dtype != DType::f32) dz = run(OpKind::k_cast, to_low, {&dz});
    Value dh = run(OpKind::k_matmul, none, {&dz, &hd.w});
    Value dw = run(OpKind::k_matmul, ta, {&dz, &hd.h});
    benchmark::DoNotOptimize(loss.data());
    benchmark::DoNotOptimize(dh.data());
    benchmark::DoNotOptimize(dw.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(6e-9 * double(kN) * kD * kV,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Fused(benchmark::State& state, DType dtype) {
  Head hd(dtype);
  loom::ops::Attrs ce;
  ce.ignore_index = -100;
  for (auto _ : state) {
    Value out = run(OpKind::k_fused_linear_cross_entropy, ce, {&hd.h, &hd.w, &hd.target, &hd.grad});
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(6e-9 * double(kN) * kD * kV,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

int main(int argc, char** argv) {
  for (DType dtype : {DType::f32, DType::bf16}) {
    std::string suffix = dtype == DType::f32 ? "/f32" : "/bf16";
    benchmark::RegisterBenchmark(("BM_Unfused" + suffix).c_str(), BM_Unfused, dtype)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("BM_Fused" + suffix).c_str(), BM_Fused, dtype)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
