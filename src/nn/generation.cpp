// loom::generate (loom/generation.h): greedy search and multinomial sampling
// for any CausalLM, after transformers' GenerationMixin._sample. Each step reads the
// last position's logits [B,V] to the host and picks the next tokens there
// (argmax, or the logits warpers of transformers' generation/logits_process.py
// and one uniform draw per row), so the device graph never depends on the
// sampling settings. With use_cache the prompt runs once over a StaticCache
// and each later step feeds one token at a cache_position uploaded as data.
// Assumes the model is in eval mode (dropout off) when reproducibility matters.
#include "loom/generation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "loom/error.h"
#include "loom/lazy.h"

namespace loom {

namespace {
// The smallest sampling temperature: 1 / FLT_MAX (about 2.9e-39).
constexpr double kMinSamplingTemperature = 1.0 / double(std::numeric_limits<float>::max());
}  // namespace

void GenerationConfig::validate() const {
  // As transformers' GenerationConfig.validate: "must be greater than 0".
  LOOM_CHECK(max_new_tokens > 0, "[generate] max_new_tokens must be greater than 0, got ",
             max_new_tokens);
  LOOM_CHECK(std::isfinite(temperature) && temperature > 0,
             "[generate] temperature must be a positive number, got ", temperature);
  // Below 1 / FLT_MAX every logit divided by it overflows f32 (1e-45, 1e-300): the
  // probabilities would be NaN. transformers fails there too (torch.multinomial:
  // "probability tensor contains either inf, nan or element < 0").
  LOOM_CHECK(!do_sample || temperature >= kMinSamplingTemperature, "[generate] temperature ",
             temperature, " is below ", kMinSamplingTemperature,
             ": logits divided by it overflow float32 and sampling probabilities become NaN "
             "(use greedy decoding, or a larger temperature)");
  LOOM_CHECK(top_k >= 0, "[generate] top_k must be >= 0 (0 = off), got ", top_k);
  LOOM_CHECK(top_p > 0 && top_p <= 1, "[generate] top_p must be in (0, 1], got ", top_p);
  LOOM_CHECK(std::isfinite(repetition_penalty) && repetition_penalty > 0,
             "[generate] repetition_penalty must be a positive number, got ", repetition_penalty);
}

namespace {

constexpr float kRemoved = -std::numeric_limits<float>::infinity();

// TopKLogitsWarper: remove logits < the k-th largest (k >= 1, clamped to V).
void top_k_filter(std::span<float> logits, int64_t top_k) {
  size_t k = std::min(static_cast<size_t>(std::max<int64_t>(top_k, 1)), logits.size());
  std::vector<float> sorted(logits.begin(), logits.end());
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k - 1),
                   sorted.end(), std::greater<float>());
  float threshold = sorted[k - 1];
  for (float& x : logits)
    if (x < threshold) x = kRemoved;
}

// softmax of `logits` into doubles (removed entries get 0).
std::vector<double> softmax_host(std::span<const float> logits) {
  float m = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(logits.size());
  double total = 0;
  for (size_t i = 0; i < logits.size(); ++i)
    total += p[i] = logits[i] == kRemoved ? 0.0 : std::exp(double(logits[i]) - double(m));
  for (double& x : p) x /= total;
  return p;
}

// TopPLogitsWarper: sort ascending, remove the prefix whose cumulative
// probability is <= 1 - top_p; the most likely token is always kept.
void top_p_filter(std::span<float> logits, double top_p) {
  std::vector<double> p = softmax_host(logits);
  std::vector<size_t> order(logits.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return logits[a] < logits[b]; });
  double cumulative = 0;
  for (size_t r = 0; r + 1 < order.size(); ++r) {  // the last (largest) is kept
    cumulative += p[order[r]];
    if (cumulative > 1.0 - top_p) break;
    logits[order[r]] = kRemoved;
  }
}

int64_t argmax_host(std::span<const float> logits) {
  return std::max_element(logits.begin(), logits.end()) - logits.begin();
}

}  // namespace

void warp_logits(std::span<float> logits, const GenerationConfig& config) {
  if (logits.empty()) return;
  // transformers adds each warper only when it changes something:
  // temperature != 1, top_k != 0, top_p < 1 (GenerationMixin._get_logits_processor).
  if (config.temperature != 1.0)
    for (float& x : logits) {
      if (x == kRemoved) continue;
      x = static_cast<float>(x / config.temperature);
      // A logit the temperature pushed past float32 would make softmax NaN.
      LOOM_CHECK(std::isfinite(x), "[generate] temperature ", config.temperature,
                 " makes a logit overflow float32 (", x,
                 "): sampling probabilities would be NaN; use a larger temperature");
    }
  if (config.top_k != 0) top_k_filter(logits, config.top_k);
  if (config.top_p < 1.0) top_p_filter(logits, config.top_p);
}

void apply_repetition_penalty(std::span<float> logits, std::span<const int64_t> previous,
                              double penalty) {
  if (penalty == 1.0) return;
  std::vector<bool> seen(logits.size(), false);
  for (int64_t id : previous) {
    if (id < 0 || id >= static_cast<int64_t>(logits.size()) || seen[id]) continue;
    seen[id] = true;
    float& x = logits[id];
    x = static_cast<float>(x > 0 ? x / penalty : x * penalty);
  }
}

int64_t select_next_token(std::span<const float> logits, const GenerationConfig& config,
                          double uniform) {
  LOOM_CHECK(!logits.empty(), "[generate] empty logits");
  if (!config.do_sample) return argmax_host(logits);
  std::vector<float> warped(logits.begin(), logits.end());
  warp_logits(warped, config);
  std::vector<double> p = softmax_host(warped);
  double cumulative = 0;
  int64_t last_possible = argmax_host(warped);
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] <= 0) continue;
    cumulative += p[i];
    last_possible = static_cast<int64_t>(i);
    if (uniform < cumulative) return last_possible;
  }
  return last_possible;  // rounding left the sum just below `uniform`
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Syncs a lazy step and returns the logits [B,1,V] as host floats [B*V].
std::vector<float> host_logits(const Tensor& logits) {
  if (logits.device().is_lazy()) lazy::mark_step();
  return logits.to_vector<float>();
}

// One model call per step: with the cache, the prompt then one token at a
// time; without it, the whole sequence every time. Returns logits [B,1,V].
class Stepper {
 public:
  Stepper(CausalLM& model, int64_t batch, int64_t max_len, bool use_cache)
      : model_(model), device_(model.device()) {
    if (use_cache) cache_.emplace(model.new_static_cache(batch, max_len));
  }

  // `seqs` [B][t] holds everything so far; `fresh` how many tokens are new.
  Tensor next_logits(const std::vector<std::vector<int64_t>>& seqs, int64_t fresh) {
    int64_t b = static_cast<int64_t>(seqs.size()), t = static_cast<int64_t>(seqs[0].size());
    int64_t from = cache_ ? t - fresh : 0, s = t - from;
    std::vector<int64_t> ids;
    ids.reserve(static_cast<size_t>(b * s));
    for (const auto& row : seqs) ids.insert(ids.end(), row.begin() + from, row.end());
    Tensor input = tensor_i64(ids, {b, s}).to(device_);
    if (!cache_) {
      ModelInputs in;
      in.input_ids = input;
      Tensor logits = model_.forward(in).logits;  // [B,t,V]
      return slice(logits, 1, t - 1, t);
    }
    Tensor position = arange(static_cast<double>(from), static_cast<double>(t)).to(device_);
    return model_.forward_with_cache(input, position, *cache_, 1).logits;
  }

 private:
  CausalLM& model_;
  Device device_;
  std::optional<StaticCache> cache_;
};

std::vector<std::vector<int64_t>> prompt_rows(const Tensor& input_ids) {
  LOOM_CHECK(input_ids.defined() && input_ids.dim() == 2 && input_ids.size(0) >= 1 &&
                 input_ids.size(1) >= 1,
             "[generate] input_ids must be [B,T] with B, T >= 1, got ",
             input_ids.defined() ? to_string(input_ids.shape()) : "undefined");
  LOOM_CHECK(input_ids.dtype() == DType::i64 || input_ids.dtype() == DType::i32,
             "[generate] input_ids must be i64 or i32, got ", dtype_name(input_ids.dtype()));
  int64_t b = input_ids.size(0), t = input_ids.size(1);
  std::vector<int64_t> flat = input_ids.to_vector<int64_t>();
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(b));
  for (int64_t i = 0; i < b; ++i) rows[i].assign(flat.begin() + i * t, flat.begin() + (i + 1) * t);
  return rows;
}

// transformers' stopping on eos: any of the ids finishes the row.
bool is_eos(const GenerationConfig& config, int64_t token) {
  if (config.eos_token_id && token == *config.eos_token_id) return true;
  return std::find(config.eos_token_ids.begin(), config.eos_token_ids.end(), token) !=
         config.eos_token_ids.end();
}

}  // namespace

GenerateOutput generate(CausalLM& model, const Tensor& input_ids, const GenerationConfig& config) {
  config.validate();
  std::vector<std::vector<int64_t>> seqs = prompt_rows(input_ids);
  int64_t b = static_cast<int64_t>(seqs.size()), t0 = static_cast<int64_t>(seqs[0].size());
  int64_t v = model.vocab_size(), n_max = config.max_new_tokens;
  // Written as a difference: t0 + n_max would overflow for n_max near 2^63.
  LOOM_CHECK(n_max <= model.max_positions() - t0, "[generate] prompt length ", t0,
             " + max_new_tokens ", n_max, " exceeds the model's ", model.max_positions(),
             " positions");
  std::optional<int64_t> pad = config.pad_token_id ? config.pad_token_id : config.eos_token_id;
  GenerateOutput out;
  NoGradGuard no_grad;
  Clock::time_point start = Clock::now();
  Stepper stepper(model, b, t0 + n_max - 1, config.use_cache);  // the last token is not fed
  std::vector<bool> finished(static_cast<size_t>(b), false);
  for (int64_t step = 0; step < n_max; ++step) {
    std::vector<float> logits = host_logits(stepper.next_logits(seqs, step == 0 ? t0 : 1));
    std::vector<double> u(static_cast<size_t>(b), 0.0);
    if (config.do_sample) u = rand({b}, DType::f32).to_vector<double>();
    bool all_done = true;
    for (int64_t i = 0; i < b; ++i) {
      std::span<float> row(logits.data() + i * v, static_cast<size_t>(v));
      if (!finished[i]) apply_repetition_penalty(row, seqs[i], config.repetition_penalty);
      int64_t token = finished[i] && pad ? *pad : select_next_token(row, config, u[i]);
      seqs[i].push_back(token);
      if (is_eos(config, token)) finished[i] = true;
      all_done = all_done && finished[i];
    }
    if (step == 0) {
      out.prefill_seconds = seconds_since(start);
      start = Clock::now();
    }
    ++out.new_tokens;
    if (all_done) break;
  }
  if (out.new_tokens > 1) out.decode_seconds = seconds_since(start);
  std::vector<int64_t> flat;
  for (const auto& row : seqs) flat.insert(flat.end(), row.begin(), row.end());
  out.sequences = tensor_i64(flat, {b, t0 + out.new_tokens});
  return out;
}

}  // namespace loom
