// error_of(f): the message of the loom::Error that f throws, or "(no error)";
// for tests that check what an error message names.
#pragma once

#include <functional>
#include <string>

#include "loom/error.h"

namespace loom::testing {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace loom::testing
