// Text generation with any CausalLM (loom/causal_lm.h: GPT-2, Llama, Qwen2, ...) (transformers'
// GenerationMixin.generate, greedy search and multinomial sampling), on token ids. With use_cache
// the model runs the prompt once and then one token per step over a StaticCache (loom/kv_cache.h),
// so the lazy device compiles at most two graphs per call; without it every step recomputes the
// whole sequence (the reference path). Sampling follows transformers' logits warpers
// (generation/logits_process.py): TemperatureLogitsWarper, then
// TopKLogitsWarper, then TopPLogitsWarper, then a draw from the softmax.
//
//   loom::manual_seed(42);                       // transformers' set_seed
//   loom::GenerationConfig gc;
//   gc.max_new_tokens = 20;  gc.do_sample = true;  gc.top_p = 0.9;
//   loom::GenerateOutput out = loom::generate(*model, ids, gc);   // ids [1,T] i64
//   // out.sequences [1, T + n] i64 on the cpu, n <= 20
//
// See docs/generation.md for the cache layout and why two graphs suffice.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "loom/causal_lm.h"

namespace loom {

/// transformers' GenerationConfig fields that loom implements, with its defaults.
struct GenerationConfig {
  int64_t max_new_tokens = 20;  ///< tokens to add (fewer when every row reached eos)
  bool do_sample = false;       ///< false: greedy (argmax); the warpers are not applied
  double temperature = 1.0;     ///< > 0; logits are divided by it (sampling only)
  int64_t top_k = 50;           ///< >= 0; keep the k highest logits (0: off)
  double top_p = 1.0;           ///< in (0, 1]; nucleus filter (1: off)
  /// transformers' repetition_penalty (CTRL, Keskar et al. 2019): > 0; every
  /// token already in the row (prompt included) has its logit divided by it
  /// when positive, multiplied when negative, before greedy or sampling (1: off).
  double repetition_penalty = 1.0;
  /// A row that produced this id is finished; later tokens of that row are
  /// pad_token_id. nullopt: never stop early.
  std::optional<int64_t> eos_token_id;
  /// More ids that finish a row as eos_token_id does (config.json's list
  /// eos_token_id, Llama 3's three); pad_token_id still defaults to eos_token_id.
  std::vector<int64_t> eos_token_ids;
  /// Filler for finished rows; defaults to eos_token_id (as transformers).
  std::optional<int64_t> pad_token_id;
  /// true: StaticCache (prompt pass + one-token steps); false: recompute
  /// the whole sequence each step.
  bool use_cache = true;

  /// Throws loom::Error "[generate] <field> ..." for max_new_tokens < 1 (as transformers),
  /// temperature <= 0 (or not finite) or, with do_sample, below 1 / FLT_MAX
  /// (the logits would overflow float32 and the probabilities be NaN), top_k
  /// < 0, top_p outside (0, 1]. warp_logits throws for a temperature that
  /// makes some logit overflow float32.
  void validate() const;
};

/// What generate() returns (transformers' GenerateDecoderOnlyOutput, plus timings).
struct GenerateOutput {
  Tensor sequences;            ///< [B, T + n] i64 on the cpu: the prompt, then n new tokens
  int64_t new_tokens = 0;      ///< n
  double prefill_seconds = 0;  ///< prompt pass up to the first token's logits on the host
  double decode_seconds = 0;   ///< the remaining n - 1 steps
};

/// Generates up to config.max_new_tokens tokens after `input_ids` [B,T]
/// (i64/i32, T >= 1, every row the same length: no padding) with `model` on
/// its own device, without gradients. Greedy picks the first maximum;
/// sampling draws one uniform per row and step from loom's global generator
/// (seed it with manual_seed for reproducible output). On the lazy device
/// every step ends with lazy::mark_step(), which also syncs any other
/// pending lazy tensor of the caller. Throws loom::Error
/// "[generate] ..." for a bad config, bad input_ids, or T + max_new_tokens >
/// model.max_positions(); errors of the model's forward pass pass through.
GenerateOutput generate(CausalLM& model, const Tensor& input_ids, const GenerationConfig& config);

/// Applies, in place, transformers' sampling warpers to one row of logits
/// [V]: divide by temperature; top-k keeps every logit >= the k-th largest
/// (ties at the threshold kept); top-p sorts the probabilities, removes the
/// smallest ones whose cumulative sum is <= 1 - top_p, always keeping the
/// most likely token. Removed entries become -infinity.
void warp_logits(std::span<float> logits, const GenerationConfig& config);

/// transformers' RepetitionPenaltyLogitsProcessor on one row of logits [V],
/// in place: for each distinct id of `previous` (ids outside [0, V) are
/// skipped), logit / penalty when > 0, else logit * penalty.
void apply_repetition_penalty(std::span<float> logits, std::span<const int64_t> previous,
                              double penalty);

/// The next token of one row of raw logits [V]: argmax (first maximum)
/// when !config.do_sample; otherwise warp_logits, softmax, and the smallest
/// index whose cumulative probability exceeds `uniform` (in [0, 1)).
/// Throws loom::Error when `logits` is empty.
int64_t select_next_token(std::span<const float> logits, const GenerationConfig& config,
                          double uniform);

}  // namespace loom
