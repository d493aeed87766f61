// matmul_layout end to end: multi-head attention with attention dropout
// written out with matmuls (as transformers' eager_attention_forward; GPT-2
// and BERT now train on the attention op, a model written this way still
// gets the strided GEMMs) forward and backward as one lazy step, whose compiled graph keeps no
// permute (every head split and merge became a layout attr), against the eager cpu device (which
// runs each permute and matmul on its own) and the reference device, at 1e-5; LOOM_MATMUL_LAYOUT=0
// gives the same numbers with the permutes.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/scoped_env.h"
#include "common/temp_dir.h"
#include "lazy/lazy_test_util.h"
#include "nn/model_test_util.h"

namespace loom {
namespace {

struct AttentionStep {
  Tensor out;
  std::vector<Tensor> grads;
};

// [B,T,C] -> [B,H,T,D] and back, as views plus permutes.
Tensor layout_test_heads(const Tensor& x, int64_t h) {
  return transpose(reshape(x, {x.size(0), x.size(1), h, x.size(2) / h}), 1, 2);
}

// softmax(q k^T / sqrt(D), masked to the lowest float) with dropout, times v.
Tensor layout_test_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                             int64_t h, double p) {
  Tensor qh = layout_test_heads(q, h), kh = layout_test_heads(k, h), vh = layout_test_heads(v, h);
  Tensor scores = matmul(qh, kh, false, true) * (1.0 / std::sqrt(double(q.size(2) / h)));
  Tensor probs = dropout(softmax(where(mask, scores, -FLT_MAX), -1), p, true);
  Tensor out = matmul(probs, vh);  // [B,H,T,D]
  return reshape(transpose(out, 1, 2), {q.size(0), q.size(1), q.size(2)});
}

// B2 T6 C12 H3, a key-padding mask, dropout 0.25 on the probabilities.
AttentionStep attention_step(const Device& dev) {
  manual_seed(5);
  Tensor q = randn({2, 6, 12}).to(dev).requires_grad_();
  Tensor k = randn({2, 6, 12}).to(dev).requires_grad_();
  Tensor v = randn({2, 6, 12}).to(dev).requires_grad_();
  Tensor r = randn({2, 6, 12}).to(dev);
  Tensor mask = reshape(tensor_i64({1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1}, {2, 6}).to(DType::boolean),
                        {2, 1, 1, 6})
                    .to(dev);
  Tensor out = layout_test_attention(q, k, v, mask, 3, 0.25);
  sum(out * r).backward();
  return {out.detach(), {q.grad(), k.grad(), v.grad()}};
}

void expect_attention_close(const AttentionStep& got, const AttentionStep& want, const char* what) {
  Device cpu("cpu");
  EXPECT_TRUE(testing::all_close(got.out.to(cpu), want.out.to(cpu), 1e-5, 1e-6)) << what;
  for (size_t i = 0; i < got.grads.size(); ++i)
    EXPECT_TRUE(testing::all_close(got.grads[i].to(cpu), want.grads[i].to(cpu), 1e-5, 1e-6))
        << what << " grad " << i;
}

// Permutes and layout matmuls in the step's final (after dce) graph.
std::pair<int, int> layout_counts(const std::string& dir) {
  int permutes = 0, layouts = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    if (f.path().filename().string().find(".dce.ir") == std::string::npos) continue;
    std::stringstream text;
    text << std::ifstream(f.path()).rdbuf();
    std::string s = text.str();
    for (size_t p = s.find("= permute("); p != std::string::npos; p = s.find("= permute(", p + 1))
      ++permutes;
    for (size_t p = s.find(" perm_"); p != std::string::npos; p = s.find(" perm_", p + 1))
      ++layouts;
  }
  return {permutes, layouts};
}

TEST(MatmulLayoutLazy, AttentionWithDropoutMatchesEagerAndReference) {
  AttentionStep ref = attention_step(Device("cpu:reference"));
  AttentionStep eager = attention_step(Device("cpu"));
  for (const char* enabled : {"1", "0"}) {
    SCOPED_TRACE(std::string("LOOM_MATMUL_LAYOUT=") + enabled);
    testing::ScopedEnv flag("LOOM_MATMUL_LAYOUT", enabled);
    testing::TempDir dump;
    testing::ScopedEnv dump_env("LOOM_DUMP_IR", dump.path());
    testing::reset_lazy();
    AttentionStep lz = attention_step(Device("lazy"));
    lazy::mark_step();
    auto [permutes, layouts] = layout_counts(dump.path());
    if (std::string(enabled) == "1") {
      EXPECT_EQ(permutes, 0) << "a head split or merge was left as a copy";
      EXPECT_GT(layouts, 0);
    } else {
      EXPECT_GT(permutes, 0);
      EXPECT_EQ(layouts, 0);
    }
    expect_attention_close(lz, ref, "lazy vs reference");
    expect_attention_close(lz, eager, "lazy vs eager");
  }
}

}  // namespace
}  // namespace loom
