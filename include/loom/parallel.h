// Thread count of loom's cpu kernels (OpenMP) and of oneDNN's GEMM, which
// runs on the same OpenMP runtime.
//
//   loom::set_num_threads(1);   // e.g. for a reproducibility check
//   int n = loom::get_num_threads();
//
// Results never depend on the thread count for random ops (Philox streams are
// indexed by element) and for every kernel that keeps a fixed accumulation
// order; float GEMM results may differ in the last bits between counts.
#pragma once

namespace loom {

/// Sets how many threads the cpu backend uses (kernels and oneDNN GEMM).
/// Takes effect for ops started afterwards from any thread. Throws
/// loom::Error "[parallel] thread count n must be >= 1" for n < 1.
void set_num_threads(int n);

/// The thread count in use: the last set_num_threads() value, else OpenMP's
/// default (OMP_NUM_THREADS or the number of cores). Always >= 1.
int get_num_threads();

}  // namespace loom
