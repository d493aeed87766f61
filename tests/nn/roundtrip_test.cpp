// The loom half of the round trip into transformers (run by
// tools/check_roundtrip.py, which sets LOOM_ROUNDTRIP_DIR): load each
// fixture, train it one SGD step on the lazy device so its weights are
// loom's own, save_pretrained it (GPT-2 and Llama also sharded), and write loom's
// logits for the golden inputs beside it (loom_logits.safetensors). The
// script then loads every directory with transformers and compares logits.
// Without LOOM_ROUNDTRIP_DIR the test is skipped.
#include <gtest/gtest.h>

#include <cstdlib>

#include "nn/model_test_util.h"

namespace loom {
namespace {

TEST(ModelRoundTrip, SaveForTransformers) {
  const char* out_dir = std::getenv("LOOM_ROUNDTRIP_DIR");
  if (!out_dir) GTEST_SKIP() << "set LOOM_ROUNDTRIP_DIR (tools/check_roundtrip.py does)";
  Device dev("lazy");
  for (std::string name : {"gpt2", "bert", "bert_seqcls", "llama", "qwen2", "qwen3"}) {
    testing::Golden g = testing::load_golden(testing::model_fixture(name) + "/golden.safetensors");
    auto model = auto_from_pretrained(testing::model_fixture(name), dev);
    ModelInputs in = testing::golden_inputs(g, dev);
    model->forward(in).loss.backward();
    {
      NoGradGuard no_grad;
      for (auto& [n, p] : model->named_parameters()) p.copy_(p - p.grad() * 0.05);
    }
    model->zero_grad();
    lazy::mark_step();
    Tensor logits = model->forward(in).logits.to(Device("cpu"));
    std::vector<std::string> dirs{std::string(out_dir) + "/" + name};
    model->save_pretrained(dirs[0]);
    if (name == "gpt2" || name == "llama") {
      dirs.push_back(std::string(out_dir) + "/" + name + "_sharded");
      model->save_pretrained(dirs[1], 50'000);
    }
    for (const std::string& d : dirs)
      safetensors::save(d + "/loom_logits.safetensors",
                        {{"logits", logits.dtype(), logits.shape(), logits.data()}});
  }
}

}  // namespace
}  // namespace loom
