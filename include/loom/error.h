// loom::Error: the one exception type for every failure a user can cause.
// Messages name the op or file in brackets and the offending values, e.g.
//   [matmul] shapes [2,3] and [4,5] do not match
// LOOM_CHECK(cond, "[op] ...", args...) builds such a message with
// operator<< formatting and throws when cond is false.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace loom {

/// Thrown for every user-caused failure (bad shape, axis, dtype, file).
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}
}  // namespace detail

/// Throws loom::Error whose message is the concatenation of `args`.
template <typename... Args>
[[noreturn]] void fail(const Args&... args) {
  throw Error(detail::concat(args...));
}

}  // namespace loom

/// Throws loom::Error built from the remaining arguments when `cond` is false.
#define LOOM_CHECK(cond, ...)      \
  do {                             \
    if (!(cond)) {                 \
      ::loom::fail(__VA_ARGS__);   \
    }                              \
  } while (0)
