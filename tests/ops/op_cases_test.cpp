// The op test table's core: CaseEnv (seeded operand builders), the table
// assembled from the family files, and checks of the table itself — every
// op has several cases, labels are unique, operands are reproducible across
// devices, each case really runs its op, and each op has an awkward shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "autograd/engine.h"
#include "lazy/tensor_impl.h"
#include "loom/error.h"
#include "ops/op_cases.h"

namespace loom::optest {

CaseEnv::CaseEnv(Device device, DType dtype, uint64_t seed)
    : device_(std::move(device)), dtype_(dtype), rng_(seed) {}

double CaseEnv::unit() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

Tensor CaseEnv::values(const std::vector<double>& v, const Shape& shape, DType dtype) {
  EXPECT_EQ(static_cast<int64_t>(v.size()), numel(shape)) << "case values do not fill shape";
  std::vector<unsigned char> bytes(v.size() * dtype_size(dtype) + 1);
  for (size_t i = 0; i < v.size(); ++i) store_from_double(bytes.data(), dtype, i, v[i]);
  return from_blob(bytes.data(), shape, dtype, device_);
}

Tensor CaseEnv::data(const Shape& shape, double lo, double hi) {
  return data(shape, lo, hi, dtype_);
}

Tensor CaseEnv::data(const Shape& shape, double lo, double hi, DType dtype) {
  std::vector<double> v(numel(shape));
  for (double& x : v) {
    double u = unit();
    if (is_floating(dtype))
      x = lo + (hi - lo) * u;
    else if (dtype == DType::boolean)
      x = u < 0.5 ? 0.0 : 1.0;
    else
      x = std::floor(std::ceil(lo) + (std::floor(hi) - std::ceil(lo) + 1) * u);
  }
  return values(v, shape, dtype);
}

Tensor CaseEnv::away(const Shape& shape, double margin, double hi) {
  if (!is_floating(dtype_)) return data(shape, -hi, hi);
  std::vector<double> v(numel(shape));
  for (double& x : v) {
    double mag = margin + (hi - margin) * unit();
    x = unit() < 0.5 ? -mag : mag;
  }
  return values(v, shape);
}

Tensor CaseEnv::distinct(const Shape& shape, double step) {
  if (dtype_ == DType::boolean) return data(shape);
  if (!is_floating(dtype_)) step = 1.0;
  int64_t n = numel(shape);
  std::vector<double> v(n);
  for (int64_t k = 0; k < n; ++k) v[k] = static_cast<double>(k - n / 2) * step;
  for (int64_t k = n - 1; k > 0; --k) std::swap(v[k], v[rng_() % static_cast<uint64_t>(k + 1)]);
  return values(v, shape);
}

Tensor CaseEnv::grid(const Shape& shape, double lo, double hi, double step) {
  if (dtype_ == DType::boolean) return data(shape);
  int64_t steps = static_cast<int64_t>(std::floor((hi - lo) / step)) + 1;
  std::vector<double> v(numel(shape));
  for (double& x : v) x = lo + step * static_cast<double>(static_cast<int64_t>(unit() * steps));
  return values(v, shape);
}

Tensor CaseEnv::ints(const Shape& shape, int64_t lo, int64_t hi, DType dtype) {
  std::vector<double> v(numel(shape));
  for (double& x : v) x = static_cast<double>(lo + static_cast<int64_t>(unit() * double(hi - lo)));
  return values(v, shape, dtype);
}

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> table = [] {
    std::vector<OpCase> t;
    add_elementwise_cases(t);
    add_creation_cases(t);
    add_reduce_matmul_cases(t);
    add_shape_index_cases(t);
    add_nn_cases(t);
    std::stable_sort(t.begin(), t.end(),
                     [](const OpCase& a, const OpCase& b) { return a.op < b.op; });
    return t;
  }();
  return table;
}

std::vector<const OpCase*> cases_for(ops::OpKind op) {
  std::vector<const OpCase*> out;
  for (const OpCase& c : op_cases())
    if (c.op == op) out.push_back(&c);
  return out;
}

std::string case_label(const OpCase& c) { return std::string(ops::op_name(c.op)) + "/" + c.name; }

uint64_t case_seed(const OpCase& c) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  for (char ch : case_label(c)) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  return h;
}

namespace {

TEST(OpCases, EveryOpHasSeveralCases) {
  for (int i = 0; i < ops::kNumOps; ++i) {
    auto op = static_cast<ops::OpKind>(i);
    EXPECT_GE(cases_for(op).size(), 2u) << ops::op_name(op) << " needs more test cases";
  }
}

TEST(OpCases, LabelsAreUniqueAndCasesComplete) {
  std::set<std::string> seen;
  for (const OpCase& c : op_cases()) {
    EXPECT_TRUE(seen.insert(case_label(c)).second) << "duplicate case " << case_label(c);
    EXPECT_FALSE(c.dtypes.empty()) << case_label(c);
    EXPECT_TRUE(c.make && c.run) << case_label(c);
  }
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  size_t n = static_cast<size_t>(a.numel()) * dtype_size(a.dtype());
  return n == 0 || std::memcmp(a.data(), b.data(), n) == 0;
}

TEST(OpCases, OperandsAreIdenticalOnBothDevices) {
  for (const OpCase& c : op_cases()) {
    for (DType dtype : c.dtypes) {
      CaseEnv ref(Device("cpu:reference"), dtype, case_seed(c)),
          cpu(Device("cpu"), dtype, case_seed(c));
      Inputs a = c.make(ref), b = c.make(cpu);
      ASSERT_EQ(a.size(), b.size()) << case_label(c);
      for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_TRUE(same_bytes(a[i], b[i])) << case_label(c) << " operand " << i;
        EXPECT_EQ(a[i].device(), Device("cpu:reference"));
        EXPECT_EQ(b[i].device(), Device("cpu"));
      }
    }
  }
}

// Where the op records a gradient node, the case's result must come from the
// case's op (a case that silently short-cuts to another op tests nothing).
TEST(OpCases, EachCaseRunsItsOp) {
  int checked = 0;
  for (const OpCase& c : op_cases()) {
    if (ops::has_trait(c.op, ops::kNondiff) || c.dtypes[0] != DType::f32) continue;
    CaseEnv env(Device("cpu:reference"), DType::f32, case_seed(c));
    Inputs in = c.make(env);
    bool any = false;
    for (Tensor& t : in)
      if (t.defined() && is_floating(t.dtype())) t.requires_grad_(true), any = true;
    if (!any) continue;
    Tensor out = c.run(in, env);
    ASSERT_TRUE(out.impl()->grad_fn) << case_label(c) << " recorded no op";
    EXPECT_EQ(ops::op_name(out.impl()->grad_fn->op), ops::op_name(c.op)) << case_label(c);
    ++checked;
  }
  EXPECT_GT(checked, 100);
}

bool awkward(const Shape& s) {
  if (s.empty()) return true;
  for (int64_t d : s)
    if (d <= 1 || (d > 8 && d % 8 != 0)) return true;
  return false;
}

TEST(OpCases, EveryOpWithOperandsHasAnAwkwardShape) {
  for (int i = 0; i < ops::kNumOps; ++i) {
    auto op = static_cast<ops::OpKind>(i);
    if (ops::has_trait(op, ops::kNullary) || op == ops::OpKind::k_uniform ||
        op == ops::OpKind::k_normal)
      continue;
    bool found = false;
    for (const OpCase* c : cases_for(op)) {
      CaseEnv env(Device("cpu:reference"), c->dtypes[0], case_seed(*c));
      for (const Tensor& t : c->make(env)) found = found || (t.defined() && awkward(t.shape()));
    }
    EXPECT_TRUE(found) << ops::op_name(op) << " has no case with a size-0/1, rank-0 or odd dim";
  }
}

}  // namespace
}  // namespace loom::optest
