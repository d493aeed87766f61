// Random kernels and thread counts: dropout, uniform and normal on the cpu
// backend give bit-identical values to the reference for every element, at
// every thread count and odd lengths/offsets (Philox values depend on the
// element index only). Also loom::set_num_threads validation, and that
// kernels give the same result whatever the thread count.
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu_test_util.h"
#include "loom/error.h"
#include "loom/parallel.h"

namespace loom::cpu_test {
namespace {

using ops::OpKind;

// Restores the thread count on scope exit.
struct ThreadCountGuard {
  int saved = get_num_threads();
  ~ThreadCountGuard() { set_num_threads(saved); }
};

Operand generator(int64_t seed, int64_t offset) {
  return operand_of({double(seed), double(offset)}, {2}, DType::i64);
}

TEST(CpuRandom, DropoutMaskIndependentOfThreadCount) {
  ThreadCountGuard guard;
  for (int threads : {1, 2, 3, 5}) {
    set_num_threads(threads);
    for (int64_t n : {1, 3, 4, 5, 1023, 1025, 100003})
      for (DType dt : {DType::f32, DType::bf16}) {
        ops::Attrs a;
        a.dropout_p = 0.37;
        expect_match(OpKind::k_dropout, a, {random_operand({n}, dt, 1), generator(1234, 17)},
                     "dropout n=" + std::to_string(n) + " threads=" + std::to_string(threads),
                     {0, 0});
      }
  }
}

TEST(CpuRandom, UniformAndNormalBitIdentical) {
  ThreadCountGuard guard;
  for (int threads : {1, 2, 4}) {
    set_num_threads(threads);
    for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
      ops::Attrs a;
      a.shape = {3, 33337};
      a.dtype = dt;
      expect_match(OpKind::k_uniform, a, {generator(7, (int64_t{1} << 33) + 5)}, "uniform", {0, 0});
      expect_match(OpKind::k_normal, a, {generator(-3, 2)}, "normal", {0, 0});
    }
  }
}

TEST(CpuRandom, DropoutKeepsExpectedFraction) {
  ops::Attrs a;
  a.dropout_p = 0.25;
  int64_t n = 200000;
  std::vector<double> out =
      run_on(backends::cpu_backend(), OpKind::k_dropout, a,
             {operand_of(std::vector<double>(n, 1.0), {n}, DType::f32), generator(5, 0)});
  int64_t kept = 0;
  for (double v : out) {
    if (v != 0) {
      EXPECT_FLOAT_EQ(v, 1.0 / 0.75);
      ++kept;
    }
  }
  EXPECT_NEAR(double(kept) / double(n), 0.75, 0.005);  // binomial sd ~0.001
}

TEST(CpuThreads, SetNumThreadsValidates) {
  ThreadCountGuard guard;
  EXPECT_THROW(set_num_threads(0), Error);
  set_num_threads(3);
  EXPECT_EQ(get_num_threads(), 3);
}

TEST(CpuThreads, ResultsIndependentOfThreadCount) {
  ThreadCountGuard guard;
  Operand x = random_operand({97, 1031}, DType::f32, 3);
  Operand w = random_operand({1031, 65}, DType::f32, 4);
  std::vector<std::vector<double>> results;
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    ops::Attrs sm;
    sm.axis = 1;
    ops::Attrs sum;
    sum.axes = {0};
    std::vector<double> r = run_on(backends::cpu_backend(), OpKind::k_softmax, sm, {x});
    std::vector<double> s = run_on(backends::cpu_backend(), OpKind::k_sum, sum, {x});
    std::vector<double> g = run_on(backends::cpu_backend(), OpKind::k_gelu, {}, {x});
    r.insert(r.end(), s.begin(), s.end());
    r.insert(r.end(), g.begin(), g.end());
    results.push_back(r);
    expect_match(OpKind::k_matmul, {}, {x, w}, "matmul threads=" + std::to_string(threads),
                 {1e-6, 1.2e-7 * 1031});
  }
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
}

}  // namespace
}  // namespace loom::cpu_test
