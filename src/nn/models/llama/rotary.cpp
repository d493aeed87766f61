// Rotary position embeddings (rotary.h). Formulas from transformers'
// modeling_rope_utils.py; the llama3 bands from Meta's Llama 3.1 release
// (apply_scaling in llama/model.py), as transformers implements them.
#include "nn/models/llama/rotary.h"

#include <cmath>
#include <numbers>

namespace loom {

std::vector<float> rope_inv_freq(const LlamaConfig& config) {
  const int64_t dim = config.head_size();
  const RopeScaling& r = config.rope_scaling;
  std::vector<float> inv(static_cast<size_t>(dim / 2));
  for (int64_t i = 0; i < dim / 2; ++i) {
    // torch: base ** (arange(0, dim, 2).float() / dim), all in f32.
    float exponent = static_cast<float>(2 * i) / static_cast<float>(dim);
    float f = 1.0f / std::pow(static_cast<float>(config.rope_theta), exponent);
    if (r.rope_type == "linear") f = f / static_cast<float>(r.factor);
    if (r.rope_type == "llama3") {
      const double old_len = static_cast<double>(r.original_max_position_embeddings);
      const double low_wavelen = old_len / r.low_freq_factor;
      const double high_wavelen = old_len / r.high_freq_factor;
      const double w = 2 * std::numbers::pi / f;  // the wavelength
      double scaled = w > low_wavelen ? f / r.factor : f;
      if (!(w < high_wavelen) && !(w > low_wavelen)) {
        double smooth =
            (old_len / w - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
        scaled = (1 - smooth) * scaled / r.factor + smooth * scaled;
      }
      f = static_cast<float>(scaled);
    }
    inv[static_cast<size_t>(i)] = f;
  }
  return inv;
}

LlamaRotaryEmbedding::LlamaRotaryEmbedding(const LlamaConfig& config) {
  std::vector<float> inv = rope_inv_freq(config);
  inv_freq_ = register_buffer("inv_freq", tensor(inv, {static_cast<int64_t>(inv.size())}),
                              /*persistent=*/false);
}

std::pair<Tensor, Tensor> LlamaRotaryEmbedding::forward(const Tensor& position_ids) const {
  const Tensor& inv = buffer(inv_freq_);  // [D/2] f32
  int64_t b = position_ids.size(0), t = position_ids.size(1), half = inv.size(0);
  Tensor pos = reshape(cast(position_ids, DType::f32), {b, t, 1});
  Tensor freqs = pos * reshape(inv, {1, 1, half});                       // [b,T,D/2]
  Tensor emb = reshape(concat({freqs, freqs}, 2), {b, t, 1, 2 * half});  // [b,T,1,D]
  return {cos(emb), sin(emb)};
}

Tensor apply_rotary(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  int64_t d = x.size(3);
  Tensor x1 = slice(x, 3, 0, d / 2), x2 = slice(x, 3, d / 2, d);
  Tensor rotated = concat({neg(x2), x1}, 3);
  return x * cast(cos, x.dtype()) + rotated * cast(sin, x.dtype());
}

}  // namespace loom
