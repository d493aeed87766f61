// The loom half of the LoRA round trip into PEFT (run by
// tools/check_lora_roundtrip.py, which sets LOOM_LORA_ROUNDTRIP_DIR): for the
// tiny Llama, Qwen2 and GPT-2 fixtures, attach fresh LoRA adapters, train
// them three SGD steps on the lazy device (lora_B starts at zero, so the
// adapter's effect is loom's own), save the adapter with save_pretrained and
// write loom's logits for the golden inputs beside it
// (loom_logits.safetensors). The script loads each adapter with
// peft.PeftModel.from_pretrained on the transformers model and compares.
// Without LOOM_LORA_ROUNDTRIP_DIR the test is skipped.
#include <gtest/gtest.h>

#include <cstdlib>

#include "loom/lora.h"
#include "nn/model_test_util.h"

namespace loom {
namespace {

TEST(LoraRoundTrip, SaveForPeft) {
  const char* out_dir = std::getenv("LOOM_LORA_ROUNDTRIP_DIR");
  if (!out_dir) GTEST_SKIP() << "set LOOM_LORA_ROUNDTRIP_DIR (tools/check_lora_roundtrip.py does)";
  Device dev("lazy");
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"llama", {"all-linear"}}, {"qwen2", {}}, {"gpt2", {"c_attn", "c_proj", "c_fc"}}};
  for (const auto& [name, targets] : cases) {
    testing::Golden g = testing::load_golden(testing::model_fixture(name) + "/golden.safetensors");
    auto base = std::dynamic_pointer_cast<CausalLM>(
        auto_from_pretrained(testing::model_fixture(name), dev));
    LoraConfig cfg;
    cfg.r = 4;
    cfg.lora_alpha = 8;
    cfg.target_modules = targets;
    cfg.base_model_name_or_path = testing::model_fixture(name);
    manual_seed(7);
    auto model = get_peft_model(base, cfg);
    ModelInputs in = testing::golden_inputs(g, dev);
    for (int step = 0; step < 3; ++step) {
      model->forward(in).loss.backward();
      {
        NoGradGuard no_grad;
        for (auto& [n, p] : model->named_parameters())
          if (p.requires_grad()) p.copy_(p - p.grad() * 0.5);
      }
      model->zero_grad();
      lazy::mark_step();
    }
    Tensor logits = model->forward(in).logits.to(Device("cpu"));
    const std::string dir = std::string(out_dir) + "/" + name;
    model->save_pretrained(dir);
    safetensors::save(dir + "/loom_logits.safetensors",
                      {{"logits", logits.dtype(), logits.shape(), logits.data()}});
  }
}

}  // namespace
}  // namespace loom
