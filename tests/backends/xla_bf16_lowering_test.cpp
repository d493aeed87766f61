// bf16 for tensor cores (issue 40, deliverable 6): a GPT-2 training step
// traced under autocast (loom/autocast.h; the Trainer's --bf16 where the
// device has native bf16) and lowered for lazy:xla (LOOM_DUMP_IR's .mlir
// files) is read as text:
// - every stablehlo.dot_general takes bf16 operands and gives an f32 result
//   (f32 accumulation: what cuBLAS / XLA's GPU GEMMs run on tensor cores
//   from bf16 inputs), attention's four included (flash attention's
//   precision: scores and dS in f32, P and dS rounded to bf16 for their GEMMs);
// - no operand of a dot_general reaches back, through converts and layout
//   ops alone (reshape, transpose, broadcast_in_dim), from bf16 to an f32
//   value to bf16 again: no f32 round trip between two matmuls. (Elementwise
//   math on bf16 values computes in f32 and rounds once, by design,
//   docs/backends.md "Numerics"; XLA fuses those converts into the kernel.)
// The fused cross-entropy pass never fires for xla (its composites are
// decomposed), so there is no chunked loss to check here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "backends/xla_test_util.h"
#include "common/scoped_env.h"
#include "common/temp_dir.h"
#include "lazy/lazy_test_util.h"
#include "loom/autocast.h"
#include "loom/gpt2.h"
#include "loom/lazy.h"
#include "loom/ops.h"
#include "loom/optim.h"
#include "loom/tensor.h"

namespace loom::xla_bf16_lowering_test {
namespace {

namespace fs = std::filesystem;

// One SSA definition of a lowered module: "%v3 = stablehlo.op %a, %b ... : (...) -> T".
struct MlirDef {
  std::string op;
  std::vector<std::string> operands;
  std::vector<std::string> operand_elems;  // from the "(tensor<..xE>, ...)" signature
  std::string elem;                        // the result's element type
  std::string line;
};

std::string elem_of(const std::string& tensor_type) {
  size_t close = tensor_type.rfind('>');
  size_t x = tensor_type.rfind('x', close);
  size_t lt = tensor_type.rfind('<', close);
  size_t from = (x != std::string::npos && x > lt) ? x + 1 : lt + 1;
  return tensor_type.substr(from, close - from);
}

// The definitions of one module, by value name (functions share no names).
std::map<std::string, MlirDef> parse_defs(const std::string& text) {
  static const std::regex def_re(R"(^\s*(%[\w#]+) = ((?:stablehlo|chlo)\.\w+)(.*)$)");
  static const std::regex value_re(R"(%[\w]+)");
  static const std::regex type_re(R"(tensor<[^>]*>)");
  std::map<std::string, MlirDef> defs;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, def_re)) continue;
    MlirDef d;
    d.op = m[2];
    d.line = line;
    std::string rest = m[3];
    size_t colon = rest.rfind(" : ");
    std::string args = colon == std::string::npos ? rest : rest.substr(0, colon);
    std::string sig = colon == std::string::npos ? "" : rest.substr(colon + 3);
    for (std::sregex_iterator it(args.begin(), args.end(), value_re), end; it != end; ++it)
      d.operands.push_back(it->str());
    size_t arrow = sig.rfind("-> ");
    std::string ins = arrow == std::string::npos ? "" : sig.substr(0, arrow);
    for (std::sregex_iterator it(ins.begin(), ins.end(), type_re), end; it != end; ++it)
      d.operand_elems.push_back(elem_of(it->str()));
    std::string out = arrow == std::string::npos ? sig : sig.substr(arrow + 3);
    std::smatch t;
    if (std::regex_search(out, t, type_re)) d.elem = elem_of(t.str());
    defs[m[1]] = d;
  }
  return defs;
}

bool is_layout(const std::string& op) {
  return op == "stablehlo.reshape" || op == "stablehlo.transpose" ||
         op == "stablehlo.broadcast_in_dim" || op == "stablehlo.convert";
}

// "" when `v`, walked back through layout ops and converts, never goes
// bf16 -> f32 -> bf16; else the lines of the round trip.
std::string round_trip(const std::map<std::string, MlirDef>& defs, std::string v) {
  std::string seen;  // element types from the dot_general outward, runs merged
  std::string path;
  auto see = [&seen](const std::string& elem) {
    if (seen.empty() || seen.substr(seen.rfind(' ') + 1) != elem) seen += " " + elem;
  };
  for (int hops = 0; hops < 64; ++hops) {
    auto it = defs.find(v);
    if (it == defs.end()) break;  // a function argument
    const MlirDef& d = it->second;
    see(d.elem);
    path += "\n    " + d.line;
    if (seen.find(" bf16 f32 bf16") != std::string::npos) return path;
    if (!is_layout(d.op) || d.operands.empty()) break;
    if (!defs.count(d.operands[0]) && !d.operand_elems.empty()) see(d.operand_elems[0]);
    if (seen.find(" bf16 f32 bf16") != std::string::npos) return path;
    v = d.operands[0];
  }
  return "";
}

// The .mlir modules LOOM_DUMP_IR wrote for one training step of a one-layer
// GPT-2 traced under autocast on lazy:xla.
std::vector<std::string> bf16_step_modules() {
  testing::TempDir dump;
  testing::ScopedEnv dump_env("LOOM_DUMP_IR", dump.path());
  testing::reset_lazy();
  Device dev("lazy:xla");
  manual_seed(0);
  GPT2Config cfg;
  cfg.vocab_size = 512;
  cfg.n_positions = 32;
  cfg.n_layer = 1;
  cfg.n_embd = 64;
  cfg.n_head = 2;
  auto model = std::make_shared<GPT2LMHeadModel>(cfg);
  model->train();
  model->to(dev);
  optim::AdamW opt(optim::weight_decay_groups(model->named_parameters(), 0.01), {.lr = 1e-4});
  std::vector<int64_t> ids(2 * 32);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7919 + 13) % 512);
  ModelInputs in;
  in.input_ids = in.labels = tensor_i64(ids, {2, 32}).to(dev);
  Tensor loss;
  {
    AutocastGuard amp;
    loss = model->forward(in).loss;
  }
  loss.backward();
  optim::clip_grad_norm_(model->parameters(), 1.0);
  opt.step();
  opt.zero_grad();
  lazy::mark_step();
  EXPECT_TRUE(std::isfinite(loss.item()));
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dump.path())) {
    if (e.path().extension() != ".mlir") continue;
    std::ifstream f(e.path());
    std::stringstream s;
    s << f.rdbuf();
    out.push_back(s.str());
  }
  return out;
}

TEST(XlaBf16Lowering, EveryDotGeneralIsBf16WithF32Accumulation) {
  LOOM_REQUIRE_XLA();
  std::vector<std::string> modules = bf16_step_modules();
  ASSERT_FALSE(modules.empty()) << "LOOM_DUMP_IR wrote no .mlir";
  int dots = 0;
  for (const std::string& text : modules) {
    std::map<std::string, MlirDef> defs = parse_defs(text);
    for (const auto& [name, d] : defs) {
      if (d.op != "stablehlo.dot_general") continue;
      ++dots;
      ASSERT_EQ(d.operand_elems.size(), 2u) << d.line;
      EXPECT_EQ(d.operand_elems[0], "bf16") << "an f32 matmul under autocast:\n" << d.line;
      EXPECT_EQ(d.operand_elems[1], "bf16") << "an f32 matmul under autocast:\n" << d.line;
      EXPECT_EQ(d.elem, "f32") << "not accumulated in f32:\n" << d.line;
      for (const std::string& o : d.operands)
        EXPECT_EQ(round_trip(defs, o), "")
            << "an f32 round trip into a matmul:\n  " << d.line << round_trip(defs, o);
    }
  }
  // Forward: c_attn, q k^T, w v, c_proj, c_fc, mlp c_proj, the LM head (7);
  // backward: two per weight or activation gradient.
  EXPECT_GE(dots, 14) << "fewer dot_generals than a one-layer GPT-2 step has";
}

// The bf16 GEMMs of attention (P and dS rounded to bf16, as flash attention)
// stay within bf16's rounding of lazy:cpu's attention, which computes in f32
// and rounds once: forward and the three gradients, causal, two heads.
TEST(XlaBf16Lowering, Bf16AttentionMatchesLazyCpuWithinBf16Rounding) {
  LOOM_REQUIRE_XLA();
  auto run = [](const Device& dev) {
    manual_seed(9);
    std::vector<Tensor> qkv;
    for (int i = 0; i < 3; ++i)
      qkv.push_back(randn({2, 2, 16, 8}).to(DType::bf16).to(dev).requires_grad_());
    Tensor g = randn({2, 2, 16, 8}).to(DType::bf16).to(dev);
    Tensor out = scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], Tensor(), /*causal=*/true);
    sum(out.to(DType::f32) * g.to(DType::f32)).backward();
    std::vector<std::vector<float>> r = {out.to(DType::f32).to_vector<float>()};
    for (const Tensor& t : qkv) r.push_back(t.grad().to(DType::f32).to_vector<float>());
    return r;
  };
  std::vector<std::vector<float>> cpu = run(Device("lazy")), xla = run(Device("lazy:xla"));
  for (size_t i = 0; i < cpu.size(); ++i) {
    ASSERT_EQ(xla[i].size(), cpu[i].size());
    float scale = 0, worst = 0;
    for (size_t j = 0; j < cpu[i].size(); ++j) {
      scale = std::max(scale, std::abs(cpu[i][j]));
      worst = std::max(worst, std::abs(xla[i][j] - cpu[i][j]));
    }
    EXPECT_GT(scale, 0.1f) << "result " << i << " is too small to compare";
    EXPECT_LE(worst, 2e-2f * scale) << "result " << i << " (0 out, 1-3 dq dk dv): max |xla - cpu| "
                                    << worst << " against max |cpu| " << scale;
  }
}

TEST(XlaBf16Lowering, TheRoundTripCheckSeesARoundTrip) {
  const std::string text =
      "    %v1 = stablehlo.convert %arg0 : (tensor<4x4xbf16>) -> tensor<4x4xf32>\n"
      "    %v2 = stablehlo.reshape %v1 : (tensor<4x4xf32>) -> tensor<16xf32>\n"
      "    %v3 = stablehlo.reshape %v2 : (tensor<16xf32>) -> tensor<4x4xf32>\n"
      "    %v4 = stablehlo.convert %v3 : (tensor<4x4xf32>) -> tensor<4x4xbf16>\n"
      "    %v5 = stablehlo.add %v4, %v4 : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> "
      "tensor<4x4xbf16>\n";
  std::map<std::string, MlirDef> defs = parse_defs(text);
  ASSERT_EQ(defs.size(), 5u);
  EXPECT_EQ(defs["%v5"].operand_elems, (std::vector<std::string>{"bf16", "bf16"}));
  EXPECT_NE(round_trip(defs, "%v4"), "");
  EXPECT_EQ(round_trip(defs, "%v5"), "") << "an add is arithmetic, not a round trip";
  EXPECT_EQ(round_trip(defs, "%v3"), "");
}

}  // namespace
}  // namespace loom::xla_bf16_lowering_test
