// Reference random kernels on Philox4x32-10 (core/philox.h). The generator
// operand is int64[2] = (seed, offset). dropout keeps element i when
// uniform(i) >= p and scales it by 1/(1-p) (inverted dropout, as torch);
// normal uses Box-Muller on uniforms 2i and 2i+1.
#include <cmath>
#include <numbers>

#include "backends/reference/reference.h"
#include "core/philox.h"

namespace loom::backends::reference {
namespace {
struct Gen {
  uint64_t seed, offset;
};
Gen gen_of(const ConstView& v) {
  return {static_cast<uint64_t>(v.as<int64_t>()[0]), static_cast<uint64_t>(v.as<int64_t>()[1])};
}
}  // namespace

void ref_dropout(const OpCall& c) {
  Gen g = gen_of(c.inputs[1]);
  double p = c.attrs->dropout_p;
  std::vector<double> x = load(c.inputs[0]);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = philox::uniform(g.seed, g.offset, i) >= p ? x[i] / (1.0 - p) : 0.0;
  store(c.output, x);
}

void ref_uniform(const OpCall& c) {
  Gen g = gen_of(c.inputs[0]);
  std::vector<double> r(c.output.type.numel());
  for (size_t i = 0; i < r.size(); ++i) r[i] = philox::uniform(g.seed, g.offset, i);
  store(c.output, r);
}

void ref_normal(const OpCall& c) {
  Gen g = gen_of(c.inputs[0]);
  std::vector<double> r(c.output.type.numel());
  for (size_t i = 0; i < r.size(); ++i) {
    double u1 = philox::uniform(g.seed, g.offset, 2 * i);
    double u2 = philox::uniform(g.seed, g.offset, 2 * i + 1);
    r[i] = std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
  store(c.output, r);
}

}  // namespace loom::backends::reference
