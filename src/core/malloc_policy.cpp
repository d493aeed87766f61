// retain_freed_memory (see malloc_policy.h).
#include "core/malloc_policy.h"

#include <cstdlib>
#include <limits>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "core/settings.h"

namespace loom {

void retain_freed_memory() {
  static const bool applied = [] {
#if defined(__GLIBC__)
    if (!settings::flag(Setting::malloc_retain)) return false;
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
    mallopt(M_ARENA_MAX, 1);
    return true;
#else
    return false;
#endif
  }();
  (void)applied;
}

void trim_freed_memory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace loom
