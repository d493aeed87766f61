// The process-wide thread count behind loom::set_num_threads (loom/parallel.h).
#include <omp.h>

#include <atomic>

#include "core/parallel.h"
#include "loom/error.h"

namespace loom {
namespace {
std::atomic<int> g_threads{0};  // 0 = not set: OpenMP's default
}  // namespace

void set_num_threads(int n) {
  LOOM_CHECK(n >= 1, "[parallel] thread count ", n, " must be >= 1");
  g_threads.store(n);
  omp_set_num_threads(n);
}

int get_num_threads() {
  int n = g_threads.load();
  if (n > 0) return n;
  static const int kDefault = std::max(1, omp_get_max_threads());
  return kDefault;
}

}  // namespace loom
