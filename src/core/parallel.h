// OpenMP helpers for the cpu kernels: parallel_for splits [0, n) into one
// contiguous range per thread (so each thread runs a vectorizable inner
// loop), and stays serial for small n or when already inside a parallel
// region. Assumes the function passed never throws (an exception cannot leave
// an OpenMP region): kernels validate their inputs before parallel loops.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "loom/parallel.h"

namespace loom {

/// Calls f(begin, end) over disjoint ranges covering [0, n). Ranges have at
/// least `grain` elements (a range per thread, at most get_num_threads()).
/// Serial (one call f(0, n)) when n <= grain, one thread is set, or the
/// caller is already in a parallel region.
template <typename F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
  int64_t chunks = grain > 0 ? (n + grain - 1) / grain : n;
  int threads = static_cast<int>(std::min<int64_t>(get_num_threads(), chunks));
  if (threads <= 1 || omp_in_parallel()) {
    f(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    int64_t tid = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t begin = n * tid / nt, end = n * (tid + 1) / nt;
    if (begin < end) f(begin, end);
  }
}

/// Makes the calling thread's OpenMP default team size equal to
/// get_num_threads(), so libraries on the same runtime (oneDNN) follow it.
inline void sync_omp_threads() {
  int n = get_num_threads();
  if (omp_get_max_threads() != n) omp_set_num_threads(n);
}

}  // namespace loom
