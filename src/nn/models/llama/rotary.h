// Rotary position embeddings as transformers computes them
// (modeling_rope_utils.py: _compute_default/linear/llama3_parameters;
// modeling_llama.py: LlamaRotaryEmbedding, rotate_half, apply_rotary_pos_emb).
// The inverse frequencies are a non-persistent buffer (as HF's inv_freq), so
// cos/sin are computed on the device from position ids that are data: a
// decode step's position never becomes a graph constant.
#pragma once

#include <vector>

#include "loom/llama_config.h"
#include "loom/nn.h"

namespace loom {

/// inv_freq [head_dim / 2] for `config` (rope_theta, rope_scaling), in f32
/// as transformers computes it: 1 / theta^(2i/d); "linear" divides by
/// factor; "llama3" divides the low-frequency band by factor and blends the
/// middle band.
std::vector<float> rope_inv_freq(const LlamaConfig& config);

class LlamaRotaryEmbedding : public nn::Module {
 public:
  explicit LlamaRotaryEmbedding(const LlamaConfig& config);
  std::string type_name() const override { return "LlamaRotaryEmbedding"; }
  /// position_ids [B or 1, T] (integer) -> {cos, sin}, each f32 [B or 1, T, 1, head_dim]
  /// (emb = cat(freqs, freqs)), shaped to broadcast over [B, T, heads, head_dim].
  std::pair<Tensor, Tensor> forward(const Tensor& position_ids) const;

 private:
  size_t inv_freq_ = 0;
};

/// x * cos + rotate_half(x) * sin for x [B, T, heads, head_dim], where
/// rotate_half(x) = cat(-x[..., d/2:], x[..., :d/2]).
Tensor apply_rotary(const Tensor& x, const Tensor& cos, const Tensor& sin);

}  // namespace loom
