// Qwen3 (model_type "qwen3", Qwen3ForCausalLM / Qwen3Model): transformers'
// qwen3/configuration_qwen3.py defaults as a LlamaConfig. Qwen3 is the Llama network
// (src/nn/models/llama/) with two differences that LlamaConfig answers for the type:
// qk_norm() — an RMSNorm over head_dim (weights "self_attn.q_norm.weight" /
// "k_norm.weight", [head_dim]) on every query and key head before the rotary
// embedding — and an explicit head_dim (128 by default, not hidden_size / heads).
// Like Llama (and unlike Qwen2), attention_bias sets the q/k/v/o biases; the sliding
// window is refused by LlamaConfig::validate (use_sliding_window true), as for Qwen2.
#include "loom/llama_config.h"

namespace loom {

LlamaConfig LlamaConfig::qwen3() {
  // transformers' Qwen3Config defaults are Qwen2Config's, plus head_dim 128.
  LlamaConfig c = qwen2();
  c.model_type = "qwen3";
  c.head_dim = 128;
  return c;
}

}  // namespace loom
