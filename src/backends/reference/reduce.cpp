// Reference reductions over a set of axes (empty = all): sum, mean, max, min,
// argmax (first maximal index; NaN counts as maximal, as torch.argmax), var
// with Bessel-style `correction` (torch.var). Max/min propagate NaN.
#include <algorithm>
#include <cmath>

#include "backends/reference/reference.h"

namespace loom::backends::reference {
namespace {

// Groups the input's flat indices by output element: groups[o] lists the
// input indices that reduce into output index o, in row-major order.
std::vector<std::vector<int64_t>> reduce_groups(const Shape& in, const std::vector<int64_t>& axes) {
  std::vector<bool> reduced(in.size(), axes.empty());
  for (int64_t ax : axes)  // a rank-0 operand's axis 0 is implicit
    if (ax < static_cast<int64_t>(in.size())) reduced[ax] = true;
  Shape kept;
  for (size_t d = 0; d < in.size(); ++d)
    if (!reduced[d]) kept.push_back(in[d]);
  std::vector<std::vector<int64_t>> groups(numel(kept));
  std::vector<int64_t> kept_strides = contiguous_strides(kept);
  int64_t n = numel(in);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, out = 0;
    for (int64_t d = static_cast<int64_t>(in.size()) - 1, k = static_cast<int64_t>(kept.size()) - 1;
         d >= 0; --d) {
      int64_t coord = rest % in[d];
      rest /= in[d];
      if (!reduced[d]) out += coord * kept_strides[k--];
    }
    groups[out].push_back(i);
  }
  return groups;
}

template <typename F>
void reduce(const OpCall& c, F f) {
  std::vector<double> x = load(c.inputs[0]);
  auto groups = reduce_groups(c.inputs[0].type.shape, c.attrs->axes);
  std::vector<double> r(groups.size());
  for (size_t o = 0; o < groups.size(); ++o) r[o] = f(x, groups[o]);
  store(c.output, r);
}

double sum_of(const std::vector<double>& x, const std::vector<int64_t>& g) {
  double s = 0;
  for (int64_t i : g) s += x[i];
  return s;
}

}  // namespace

void ref_sum(const OpCall& c) { reduce(c, sum_of); }

void ref_mean(const OpCall& c) {
  reduce(c, [](const auto& x, const auto& g) { return sum_of(x, g) / double(g.size()); });
}

void ref_var(const OpCall& c) {
  int64_t correction = c.attrs->correction;
  reduce(c, [correction](const auto& x, const auto& g) {
    double mean = sum_of(x, g) / double(g.size()), ss = 0;
    for (int64_t i : g) ss += (x[i] - mean) * (x[i] - mean);
    // torch.var: the divisor is max(0, n - correction); 0 gives inf or NaN.
    return ss / double(std::max<int64_t>(0, static_cast<int64_t>(g.size()) - correction));
  });
}

void ref_max(const OpCall& c) {
  reduce(c, [](const auto& x, const auto& g) {
    double m = -INFINITY;
    for (int64_t i : g) m = std::isnan(x[i]) || std::isnan(m) ? NAN : std::max(m, x[i]);
    return m;
  });
}

void ref_min(const OpCall& c) {
  reduce(c, [](const auto& x, const auto& g) {
    double m = INFINITY;
    for (int64_t i : g) m = std::isnan(x[i]) || std::isnan(m) ? NAN : std::min(m, x[i]);
    return m;
  });
}

void ref_argmax(const OpCall& c) {
  reduce(c, [](const auto& x, const auto& g) {
    size_t best = 0;
    for (size_t j = 1; j < g.size(); ++j) {
      if (std::isnan(x[g[best]])) break;
      if (std::isnan(x[g[j]]) || x[g[j]] > x[g[best]]) best = j;
    }
    return double(best);
  });
}

}  // namespace loom::backends::reference
