// Compares loom's ops with PyTorch: tests/fixtures/ops.safetensors (written
// by tools/make_op_fixtures.py, see docs/testing.md) holds, per case, the
// operands, PyTorch's output(s), a random R per output and the gradients of
// sum(out * R). Each case runs through the public API on Device("cpu") and
// Device("cpu:reference"); outputs and gradients must match PyTorch's (f32 to
// 1e-5 relative + 1e-5 absolute, bf16/f16 to 1e-2, integers and bools
// exactly, NaN where PyTorch has NaN).
//
// Assumes the fixture's "__metadata__" entry "cases" (JSON, see the script)
// and that every op name it uses has an entry in ops_table() below; a new op
// needs an entry in the script's TORCH_OPS and here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "loom/error.h"
#include "loom/ops.h"
#include "loom/safetensors.h"
#include "ops/compare.h"
#include "ops/op_kind.h"

namespace loom {
namespace {

using json = nlohmann::json;
using ops::OpKind;

const std::string kFixturePath = std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/ops.safetensors";

// ---- The fixture, loaded once. ----

struct Fixture {
  safetensors::File file;
  json cases;  // array of {"name", "op", "attrs", "inputs", "outputs", "grads"}
};

const Fixture& fixture() {
  static const Fixture f = [] {
    safetensors::File file = safetensors::File::open(kFixturePath);
    auto it = file.metadata().find("cases");
    LOOM_CHECK(it != file.metadata().end(), "[fixture] ", kFixturePath, ": no 'cases' metadata");
    json meta = json::parse(it->second);
    return Fixture{std::move(file), meta.at("cases")};
  }();
  return f;
}

const json& find_case(const std::string& name) {
  for (const json& c : fixture().cases)
    if (c.at("name") == name) return c;
  fail("[fixture] no case named '", name, "'");
}

// The stored tensor `name` as a new tensor on `device`.
Tensor load(const std::string& name, const Device& device) {
  const safetensors::TensorInfo& info = fixture().file.at(name);
  return from_blob(fixture().file.data(info).data(), info.shape, info.dtype, device);
}

// ---- Loom's side of each op name of the script's TORCH_OPS. ----

using Args = std::vector<Tensor>;
using OpFn = std::function<std::vector<Tensor>(const Args&, const json&, const Device&)>;

struct OpEntry {
  std::vector<OpKind> kinds;  // the ops.def kinds this entry exercises
  OpFn fn;
};

Shape shape_of(const json& j) { return j.get<Shape>(); }
std::vector<int64_t> ints(const json& j) { return j.get<std::vector<int64_t>>(); }

OpEntry one(OpKind kind, std::function<Tensor(const Args&, const json&)> f) {
  return {{kind},
          [f](const Args& x, const json& a, const Device&) { return std::vector{f(x, a)}; }};
}

#define LOOM_UNARY(name)                                                                \
  {                                                                                     \
#name, one(OpKind::k_##name, [](const Args& x, const json&) { return name(x[0]); }) \
  }
#define LOOM_BINARY(name)                                                                     \
  {                                                                                           \
#name, one(OpKind::k_##name, [](const Args& x, const json&) { return name(x[0], x[1]); }) \
  }
#define LOOM_SCALAR(name, kind)                                               \
  {                                                                           \
#name "_scalar", one(OpKind::k_##kind, [](const Args& x, const json& a) { \
      return name(x[0], a.at("scalar").get<double>());                        \
    })                                                                        \
  }
#define LOOM_REDUCE(name)                                                 \
  {                                                                       \
#name, one(OpKind::k_##name, [](const Args& x, const json& a) {       \
      return name(x[0], ints(a.at("axes")), a.at("keepdim").get<bool>()); \
    })                                                                    \
  }

void add_elementwise_ops(std::map<std::string, OpEntry>& t) {
  t.insert({LOOM_UNARY(neg), LOOM_UNARY(abs), LOOM_UNARY(sign), LOOM_UNARY(exp), LOOM_UNARY(log),
            LOOM_UNARY(sqrt), LOOM_UNARY(rsqrt), LOOM_UNARY(tanh), LOOM_UNARY(erf),
            LOOM_UNARY(sigmoid), LOOM_UNARY(relu), LOOM_UNARY(sin), LOOM_UNARY(cos)});
  t["gelu"] = {{OpKind::k_gelu, OpKind::k_gelu_tanh},
               [](const Args& x, const json& a, const Device&) {
                 return std::vector{gelu(x[0], a.at("approximate").get<std::string>())};
               }};
  // torch.ops.aten.gelu_backward(grad, x, approximate): the op autograd's gelu
  // rules emit; the cases' gradients check its own rules (double backward).
  t["gelu_backward"] = {{OpKind::k_gelu_backward, OpKind::k_gelu_tanh_backward},
                        [](const Args& x, const json& a, const Device&) {
                          OpKind op = a.at("approximate") == "tanh" ? OpKind::k_gelu_tanh_backward
                                                                    : OpKind::k_gelu_backward;
                          return std::vector{autograd::apply(op, {x[0], x[1]}, {})};
                        }};
  t["pow_scalar"] = one(OpKind::k_pow_scalar, [](const Args& x, const json& a) {
    return pow(x[0], a.at("exponent").get<double>());
  });
  t["cast"] = one(OpKind::k_cast, [](const Args& x, const json& a) {
    return cast(x[0], dtype_from_name(a.at("dtype").get<std::string>()));
  });
  t.insert({LOOM_BINARY(add), LOOM_BINARY(sub), LOOM_BINARY(mul), LOOM_BINARY(div),
            LOOM_BINARY(maximum), LOOM_BINARY(minimum), LOOM_BINARY(pow), LOOM_BINARY(eq),
            LOOM_BINARY(ne), LOOM_BINARY(lt), LOOM_BINARY(le), LOOM_BINARY(gt), LOOM_BINARY(ge)});
  t.insert({LOOM_SCALAR(add, add), LOOM_SCALAR(sub, sub), LOOM_SCALAR(mul, mul),
            LOOM_SCALAR(div, div), LOOM_SCALAR(maximum, maximum), LOOM_SCALAR(minimum, minimum),
            LOOM_SCALAR(gt, gt)});
  t["where"] =
      one(OpKind::k_where, [](const Args& x, const json&) { return where(x[0], x[1], x[2]); });
  t["where_scalar"] = one(OpKind::k_where, [](const Args& x, const json& a) {
    return where(x[0], x[1], a.at("scalar").get<double>());
  });
}

void add_reduce_matmul_ops(std::map<std::string, OpEntry>& t) {
  t.insert({LOOM_REDUCE(sum), LOOM_REDUCE(mean), LOOM_REDUCE(max), LOOM_REDUCE(min)});
  t["var"] = one(OpKind::k_var, [](const Args& x, const json& a) {
    return var(x[0], ints(a.at("axes")), a.at("correction").get<int64_t>(),
               a.at("keepdim").get<bool>());
  });
  t["argmax"] = one(OpKind::k_argmax, [](const Args& x, const json& a) {
    return argmax(x[0], a.at("axis").get<int64_t>(), a.at("keepdim").get<bool>());
  });
  t["matmul"] = one(OpKind::k_matmul, [](const Args& x, const json& a) {
    return matmul(x[0], x[1], a.at("trans_a").get<bool>(), a.at("trans_b").get<bool>());
  });
}

void add_shape_ops(std::map<std::string, OpEntry>& t) {
  t["reshape"] = one(OpKind::k_reshape, [](const Args& x, const json& a) {
    return reshape(x[0], shape_of(a.at("shape")));
  });
  t["flatten"] = one(OpKind::k_reshape, [](const Args& x, const json& a) {
    return flatten(x[0], a.at("start").get<int64_t>(), a.at("end").get<int64_t>());
  });
  t["permute"] = one(OpKind::k_permute, [](const Args& x, const json& a) {
    return permute(x[0], ints(a.at("perm")));
  });
  t["transpose"] = one(OpKind::k_permute, [](const Args& x, const json& a) {
    return transpose(x[0], a.at("axis0").get<int64_t>(), a.at("axis1").get<int64_t>());
  });
  t["unsqueeze"] = one(OpKind::k_reshape, [](const Args& x, const json& a) {
    return unsqueeze(x[0], a.at("axis").get<int64_t>());
  });
  t["squeeze"] = one(OpKind::k_reshape, [](const Args& x, const json& a) {
    return squeeze(x[0], a.at("axis").get<int64_t>());
  });
  t["slice"] = one(OpKind::k_slice, [](const Args& x, const json& a) {
    return slice(x[0], a.at("axis").get<int64_t>(), a.at("start").get<int64_t>(),
                 a.at("end").get<int64_t>(), a.at("step").get<int64_t>());
  });
  t["concat"] = one(OpKind::k_concat, [](const Args& x, const json& a) {
    return concat(x, a.at("axis").get<int64_t>());
  });
  t["split"] = {{OpKind::k_slice}, [](const Args& x, const json& a, const Device&) {
                  int64_t axis = a.at("axis").get<int64_t>();
                  if (a.contains("sizes")) return split(x[0], ints(a.at("sizes")), axis);
                  return split(x[0], a.at("split_size").get<int64_t>(), axis);
                }};
  t["expand"] = one(OpKind::k_expand, [](const Args& x, const json& a) {
    return expand(x[0], shape_of(a.at("shape")));
  });
}

void add_index_ops(std::map<std::string, OpEntry>& t) {
  auto axis = [](const json& a) { return a.at("axis").get<int64_t>(); };
  t["gather"] = one(OpKind::k_gather,
                    [axis](const Args& x, const json& a) { return gather(x[0], axis(a), x[1]); });
  t["index_select"] = one(OpKind::k_index_select, [axis](const Args& x, const json& a) {
    return index_select(x[0], axis(a), x[1]);
  });
  t["index_add"] = one(OpKind::k_index_add, [axis](const Args& x, const json& a) {
    return index_add(x[0], axis(a), x[1], x[2]);
  });
  t["index_copy"] = one(OpKind::k_index_copy, [axis](const Args& x, const json& a) {
    return index_copy(x[0], axis(a), x[1], x[2]);
  });
  t["scatter_add"] = one(OpKind::k_scatter_add, [axis](const Args& x, const json& a) {
    return scatter_add(x[0], axis(a), x[1], x[2]);
  });
  t["embedding"] =
      one(OpKind::k_embedding, [](const Args& x, const json&) { return embedding(x[0], x[1]); });
  t["one_hot"] = one(OpKind::k_one_hot, [](const Args& x, const json& a) {
    return one_hot(x[0], a.at("num_classes").get<int64_t>());
  });
}

void add_nn_and_factory_ops(std::map<std::string, OpEntry>& t) {
  t["softmax"] = one(OpKind::k_softmax, [](const Args& x, const json& a) {
    return softmax(x[0], a.at("axis").get<int64_t>());
  });
  t["log_softmax"] = one(OpKind::k_log_softmax, [](const Args& x, const json& a) {
    return log_softmax(x[0], a.at("axis").get<int64_t>());
  });
  t["layer_norm"] = one(OpKind::k_layer_norm, [](const Args& x, const json& a) {
    return layer_norm(x[0], x[1], x[2], a.at("eps").get<double>());
  });
  t["cross_entropy"] = one(OpKind::k_cross_entropy, [](const Args& x, const json& a) {
    return cross_entropy(x[0], x[1], a.at("ignore_index").get<int64_t>(),
                         a.at("label_smoothing").get<double>());
  });
  // Its gradient is the cross_entropy_backward op: the cases' gradients check it.
  t["cross_entropy"].kinds.push_back(OpKind::k_cross_entropy_backward);
  t["scaled_dot_product_attention"] = one(OpKind::k_attention, [](const Args& x, const json& a) {
    Tensor mask = x.size() > 3 ? x[3] : Tensor();
    return scaled_dot_product_attention(x[0], x[1], x[2], mask, a.at("causal").get<bool>(),
                                        a.at("scale").get<double>());
  });
  // Its gradient is the attention_backward op: the cases' gradients check it.
  t["scaled_dot_product_attention"].kinds.push_back(OpKind::k_attention_backward);
  t["arange"] = {{OpKind::k_arange}, [](const Args&, const json& a, const Device& d) {
                   return std::vector{arange(a.at("start").get<double>(), a.at("end").get<double>(),
                                             a.at("step").get<double>(),
                                             dtype_from_name(a.at("dtype").get<std::string>()), d)};
                 }};
  t["full"] = {{OpKind::k_full}, [](const Args&, const json& a, const Device& d) {
                 return std::vector{full(shape_of(a.at("shape")), a.at("value").get<double>(),
                                         dtype_from_name(a.at("dtype").get<std::string>()), d)};
               }};
}

const std::map<std::string, OpEntry>& ops_table() {
  static const std::map<std::string, OpEntry> table = [] {
    std::map<std::string, OpEntry> t;
    add_elementwise_ops(t);
    add_reduce_matmul_ops(t);
    add_shape_ops(t);
    add_index_ops(t);
    add_nn_and_factory_ops(t);
    return t;
  }();
  return table;
}

// ---- Comparison. ----

struct Tolerance {
  double rtol = 0, atol = 0;
};

Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return {1e-5, 1e-5};
    case DType::bf16:
    case DType::f16:
      return {1e-2, 1e-2};
    default:
      return {0, 0};  // integers and bools: exact
  }
}

// Adds a gtest failure naming `what` unless `actual` matches `expected` in
// shape, dtype and values (to the dtype's tolerance). `expected` is PyTorch's
// result, independent of loom, so where PyTorch gives NaN the fixture says NaN
// is the answer: NaN matches NaN there (ops/compare.h), and only there.
void expect_matches(const Tensor& actual, const Tensor& expected, const std::string& what) {
  Tolerance tol = tolerance_for(expected.dtype());
  EXPECT_TRUE(
      loom::testing::all_close(actual, expected, tol.rtol, tol.atol, loom::testing::Nan::kExpected))
      << "  in " << what;
}

// ---- The test: one instance per (case, device). ----

struct CaseParam {
  std::string name;    // case name, or "" when the fixture failed to load
  std::string device;  // "cpu" or "cpu:reference"
  std::string error;   // why loading failed
};

std::vector<CaseParam> all_params() {
  std::vector<CaseParam> params;
  try {
    for (const json& c : fixture().cases)
      for (const char* dev : {"cpu", "cpu:reference"}) params.push_back({c.at("name"), dev, ""});
  } catch (const std::exception& e) {
    params.push_back({"", "cpu", e.what()});
  }
  return params;
}

void PrintTo(const CaseParam& p, std::ostream* os) { *os << p.name << " on " << p.device; }

std::string param_name(const ::testing::TestParamInfo<CaseParam>& info) {
  if (info.param.name.empty()) return "fixture_failed_to_load";
  return info.param.name + (info.param.device == "cpu" ? "_cpu" : "_reference");
}

class TorchFixture : public ::testing::TestWithParam<CaseParam> {};

// Loads the operands of `c` onto `device`, marking those listed in "grads".
Args load_inputs(const json& c, const Device& device) {
  std::string name = c.at("name");
  std::set<int64_t> grads;
  for (const json& g : c.at("grads")) grads.insert(g.get<int64_t>());
  Args inputs;
  for (int64_t i = 0; i < c.at("inputs").get<int64_t>(); ++i) {
    Tensor t = load(name + ".in" + std::to_string(i), device);
    if (grads.count(i)) t.requires_grad_();
    inputs.push_back(t);
  }
  return inputs;
}

TEST_P(TorchFixture, MatchesPyTorch) {
  const CaseParam& p = GetParam();
  ASSERT_TRUE(p.error.empty()) << "cannot load " << kFixturePath << ": " << p.error
                               << "\n(regenerate with python3 tools/make_op_fixtures.py)";
  const json& c = find_case(p.name);
  const std::string op = c.at("op");
  auto entry = ops_table().find(op);
  ASSERT_NE(entry, ops_table().end()) << "no loom function for fixture op '" << op << "'";
  Device device(p.device);
  Args inputs = load_inputs(c, device);
  std::vector<Tensor> outs = entry->second.fn(inputs, c.at("attrs"), device);

  const int64_t n_out = c.at("outputs");
  ASSERT_EQ(static_cast<int64_t>(outs.size()), n_out) << "number of outputs";
  auto key = [&](const char* what, int64_t j) {
    return p.name + "." + what + (n_out == 1 ? "" : std::to_string(j));
  };
  for (int64_t j = 0; j < n_out; ++j) {
    EXPECT_EQ(outs[j].device().str(), device.str());
    expect_matches(outs[j], load(key("out", j), device), key("out", j));
  }
  if (c.at("grads").empty()) return;

  Tensor loss;  // sum_j sum(out_j * R_j)
  for (int64_t j = 0; j < n_out; ++j) {
    Tensor term = sum(outs[j] * load(key("R", j), device));
    loss = loss.defined() ? loss + term : term;
  }
  loss.backward();
  for (const json& g : c.at("grads")) {
    std::string i = std::to_string(g.get<int64_t>());
    expect_matches(inputs[g.get<size_t>()].grad(), load(p.name + ".grad" + i, device),
                   p.name + ".grad" + i);
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, TorchFixture, ::testing::ValuesIn(all_params()), param_name);

// Every op of ops.def has a PyTorch case, except the random ones (their
// streams are loom's Philox, not PyTorch's; tests/ops covers them) and
// fused_linear_cross_entropy, which only the compiler creates (tests/compiler/
// fused_cross_entropy_test.cpp checks it against the unfused program).
TEST(TorchFixtureCoverage, EveryOpKindHasACase) {
  std::set<OpKind> covered;
  for (const json& c : fixture().cases) {
    auto entry = ops_table().find(c.at("op").get<std::string>());
    ASSERT_NE(entry, ops_table().end()) << "no loom function for fixture op " << c.at("op");
    if (entry->first == "gelu" || entry->first == "gelu_backward") {
      bool tanh = c.at("attrs").at("approximate") == "tanh";
      if (entry->first == "gelu")
        covered.insert(tanh ? OpKind::k_gelu_tanh : OpKind::k_gelu);
      else
        covered.insert(tanh ? OpKind::k_gelu_tanh_backward : OpKind::k_gelu_backward);
    } else {
      covered.insert(entry->second.kinds.begin(), entry->second.kinds.end());
    }
  }
  // all_reduce, all_gather, reduce_scatter: one process is the identity (op tests); their values
  // over several ranks are checked under mpirun (tests/distributed/dist_worker.cpp).
  const std::set<OpKind> random = {OpKind::k_dropout,       OpKind::k_normal,
                                   OpKind::k_uniform,       OpKind::k_fused_linear_cross_entropy,
                                   OpKind::k_all_reduce,    OpKind::k_all_gather,
                                   OpKind::k_reduce_scatter};
  for (int k = 0; k < ops::kNumOps; ++k) {
    OpKind op = static_cast<OpKind>(k);
    if (random.count(op)) continue;
    EXPECT_TRUE(covered.count(op)) << "no PyTorch fixture case for op " << ops::op_name(op);
  }
}

// Every loom function of the table is exercised by some case.
TEST(TorchFixtureCoverage, EveryTableEntryIsUsed) {
  std::set<std::string> used;
  for (const json& c : fixture().cases) used.insert(c.at("op").get<std::string>());
  for (const auto& [name, entry] : ops_table())
    EXPECT_TRUE(used.count(name)) << "no fixture case calls " << name;
}

}  // namespace
}  // namespace loom
