// ScopedEnv: sets (or, given nullopt, unsets) an environment variable for one
// scope and restores its old value (or unsets it) on exit. Both times it
// calls settings::reload(), so a LOOM_* setting (core/settings.h: read once,
// then cached) takes the new value at its next use; the one way tests change
// a setting. Not thread-safe: setenv (reading settings meanwhile is).
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

#include "core/settings.h"

namespace loom::testing {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
    settings::reload();
  }
  ScopedEnv(const char* name, const char* value)
      : ScopedEnv(name, value ? std::optional<std::string>(value) : std::nullopt) {}
  ScopedEnv(const char* name, const std::string& value)
      : ScopedEnv(name, std::optional<std::string>(value)) {}
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
    settings::reload();
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace loom::testing
