// Device parsing and printing: cpu, cpu:reference, lazy[:<backend>[:<index>]].
#include "loom/device.h"

#include <cctype>

#include "loom/error.h"

namespace loom {
namespace {

bool is_name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::islower(static_cast<unsigned char>(c)) ||
          std::isdigit(static_cast<unsigned char>(c))))
      return false;
  return true;
}

bool parse_index(std::string_view s, int* out) {
  if (s.empty() || s.size() > 6) return false;
  int v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

[[noreturn]] void bad_device(std::string_view spec) {
  fail("[device] unknown device '", spec,
       "' (expected cpu, cpu:reference, lazy, lazy:<backend> or lazy:<backend>:<index>, "
       "e.g. lazy:cpu, lazy:sim:0)");
}

}  // namespace

Device::Device(std::string_view spec) {
  if (spec == "cpu") return;
  if (spec == "cpu:reference") {  // eager, on the plain-loop oracle (tests)
    backend = "reference";
    return;
  }
  if (spec == "lazy") {
    kind = Kind::lazy;
    return;
  }
  if (spec.substr(0, 5) != "lazy:") bad_device(spec);
  std::string_view rest = spec.substr(5);
  size_t colon = rest.find(':');
  std::string_view name = rest.substr(0, colon);
  if (!is_name(name)) bad_device(spec);
  if (colon != std::string_view::npos && !parse_index(rest.substr(colon + 1), &index))
    bad_device(spec);
  kind = Kind::lazy;
  backend = std::string(name);
}

std::string Device::str() const {
  std::string out = kind == Kind::lazy ? "lazy:" : "cpu";
  if (kind == Kind::lazy) {
    out += backend;
    if (index) out += ':' + std::to_string(index);
  } else if (backend != "cpu") {
    out += ':' + backend;
  }
  return out;
}

}  // namespace loom
