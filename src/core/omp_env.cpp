// loom's default OpenMP wait policy (loom/omp_env.h: omp_env_defaults,
// apply_omp_env_defaults). GNU libgomp reads OMP_WAIT_POLICY and
// GOMP_SPINCOUNT once, in its load-time constructor (libgomp/env.c,
// initialize_env), before any code of the program runs; so a process that
// wants a different spin limit must start with it in its environment. loom
// therefore re-executes itself once (/proc/self/exe, same argv, the one
// variable added) when the user has set neither variable. A marker variable
// stops a second exec; a failed exec leaves the process running unchanged.
// When /proc/self/exe is not the program (started as
// `/lib64/ld-linux-x86-64.so.2 loom ...`, /proc/self/exe is the dynamic
// loader, which would take argv[1] as the program) there is no re-exec and
// the process runs with libgomp's defaults. Assumes Linux (/proc/self/exe,
// getauxval) and glibc (dl_iterate_phdr).
#include <elf.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "core/settings.h"
#include "loom/omp_env.h"

namespace loom {

std::vector<std::pair<std::string, std::string>> omp_env_defaults(
    const std::function<const char*(const char*)>& lookup) {
  auto set = [&](const char* name) {
    const char* v = lookup(name);
    return v != nullptr;
  };
  // The user's choice wins; LOOM_OMP_DEFAULTS=0 keeps OpenMP's own default.
  if (set("OMP_WAIT_POLICY") || set("GOMP_SPINCOUNT") || set(kOmpEnvAppliedVar)) return {};
  const char* opt = lookup("LOOM_OMP_DEFAULTS");
  if (opt && std::string(opt) == "0") return {};
  return {{"GOMP_SPINCOUNT", kLoomGompSpinCount}};
}

namespace {

bool omp_env_same_file(const char* a, const struct stat& b) {
  struct stat s {};
  return a != nullptr && stat(a, &s) == 0 && s.st_dev == b.st_dev && s.st_ino == b.st_ino;
}

// The main program's PT_INTERP (its dynamic loader's path), or nullptr
// (static program). dl_iterate_phdr visits the main program first.
const char* omp_env_program_interpreter() {
  const char* interp = nullptr;
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) {
        for (int i = 0; i < info->dlpi_phnum; ++i)
          if (info->dlpi_phdr[i].p_type == PT_INTERP)
            *static_cast<const char**>(data) =
                reinterpret_cast<const char*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        return 1;  // the main program only
      },
      &interp);
  return interp;
}

// True when executing /proc/self/exe with this argv starts this program
// again: /proc/self/exe is neither the dynamic loader (the program named as
// its argument) nor a file other than the one execve was given (AT_EXECFN;
// glibc's loader sets it to the program when it runs it).
bool omp_env_self_exe_is_the_program() {
  struct stat exe {};
  if (stat("/proc/self/exe", &exe) != 0) return false;
  const char* interp = omp_env_program_interpreter();
  if (interp != nullptr && omp_env_same_file(interp, exe)) return false;
  const char* execfn = reinterpret_cast<const char*>(getauxval(AT_EXECFN));
  struct stat s {};
  if (execfn != nullptr && stat(execfn, &s) == 0 && !omp_env_same_file(execfn, exe)) return false;
  return true;
}

}  // namespace

bool apply_omp_env_defaults(char** argv) {
  auto env = omp_env_defaults([](const char* name) { return settings::environment(name); });
  if (env.empty() || argv == nullptr || argv[0] == nullptr) return false;
  if (!omp_env_self_exe_is_the_program()) return false;
  for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
  setenv(kOmpEnvAppliedVar, "1", 1);
  execv("/proc/self/exe", argv);
  // exec failed (no /proc, seccomp, ...): carry on with OpenMP's defaults.
  for (const auto& [name, value] : env) unsetenv(name.c_str());
  return false;
}

}  // namespace loom
