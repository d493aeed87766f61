// ScopedEnv: sets an environment variable for one scope and restores its old
// value (or unsets it) on exit. For tests of LOOM_* switches read at compile
// time (LOOM_DECOMPOSE, LOOM_FUSED_CE_MIN_CLASSES). Not thread-safe: setenv.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace loom::testing {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace loom::testing
