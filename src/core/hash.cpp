// Hex printing of 128-bit hashes.
#include "core/hash.h"

#include <cstdio>

namespace loom {

std::string Hash128::hex() const {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return buf;
}

}  // namespace loom
