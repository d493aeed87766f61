// How a test process ends when it reads device memory from the host (a
// PROT_NONE page: lazy:sim, lazy:xla handles), for EXPECT_EXIT: killed by
// SIGSEGV in a plain build; under a sanitizer, its own SEGV report and exit
// code (AddressSanitizer 1; ThreadSanitizer its exitcode, 66 by default and in
// scripts/test.sh's tsan phase).
#pragma once

#include <sys/wait.h>

#include <csignal>

namespace loom::testing {

/// The EXPECT_EXIT predicate for a host read of device memory.
inline bool died_of_host_fault(int status) {
#if defined(__SANITIZE_ADDRESS__)
  return WIFEXITED(status) && WEXITSTATUS(status) == 1;
#elif defined(__SANITIZE_THREAD__)
  return WIFEXITED(status) && WEXITSTATUS(status) == 66;
#else
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
#endif
}

/// What its stderr must contain: the sanitizer's report, or nothing.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr const char* kHostFaultMessage = "SEGV on unknown address";
#else
inline constexpr const char* kHostFaultMessage = "";
#endif

}  // namespace loom::testing
