// Printing of TensorType and Attrs for IR text and error messages.
#include "ops/attrs.h"

#include <iomanip>
#include <limits>
#include <sstream>

namespace loom::ops {

std::string to_string(const TensorType& type) {
  static const char* short_names[] = {"f32", "bf16", "f16", "i32", "i64", "bool"};
  return short_names[static_cast<int>(type.dtype)] + loom::to_string(type.shape);
}

std::string to_string(const Attrs& a) {
  static const Attrs defaults;
  std::ostringstream out;
  out << std::setprecision(std::numeric_limits<double>::max_digits10);
  auto field = [&](const char* name, auto value) {
    if (out.tellp() > 0) out << ' ';
    out << name << '=' << value;
  };
  if (a.shape != defaults.shape) field("shape", loom::to_string(a.shape));
  if (a.axes != defaults.axes) field("axes", loom::to_string(a.axes));
  if (a.axis != defaults.axis) field("axis", a.axis);
  if (a.start != defaults.start) field("start", a.start);
  if (a.end != defaults.end) field("end", a.end);
  if (a.step != defaults.step) field("step", a.step);
  if (a.index != defaults.index) field("index", a.index);
  if (a.scalar != defaults.scalar) field("scalar", a.scalar);
  if (a.scalar2 != defaults.scalar2) field("scalar2", a.scalar2);
  if (a.dtype != defaults.dtype) field("dtype", dtype_name(a.dtype));
  if (a.keepdim) field("keepdim", "true");
  if (a.trans_a) field("trans_a", "true");
  if (a.trans_b) field("trans_b", "true");
  if (a.causal) field("causal", "true");
  if (!a.perm_a.empty()) field("perm_a", loom::to_string(a.perm_a));
  if (!a.perm_b.empty()) field("perm_b", loom::to_string(a.perm_b));
  if (!a.perm_out.empty()) field("perm_out", loom::to_string(a.perm_out));
  return out.str();
}

}  // namespace loom::ops
