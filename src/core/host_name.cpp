// host_name() (core/host_name.h).
#include "core/host_name.h"

#include <unistd.h>

namespace loom {

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

}  // namespace loom
