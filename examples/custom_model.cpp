// A model defined and registered outside loom, in one file: the proof that
// the model registry is open (docs/models.md "A model of your own"). It
// defines a tiny decoder LM ("tiny": token + position embeddings, one
// pre-norm self-attention block with q/k/v/o projections, an MLP, an LM
// head), its config (a loom::ModelConfig: the sizes, the config-set tensor
// shapes, the max positions and the default LoRA targets that loom's size
// checks, from_pretrained and LoRA read), and registers both with one
// RegisterModelType line. Then, through loom's own entry points only, it
// builds the model from the registry's default config, trains it for a few
// AdamW steps on the lazy device to continue a repeating pattern, saves it,
// loads it back with auto_from_pretrained (which finds "TinyForCausalLM"
// through the registry) and generates greedily after 1 2 3, with and
// without the KV cache, checking the pattern.
//
//   build/example_custom_model [output_dir (default out/custom_model)] [steps (default 60)]
//
// Exits 1 when the loss does not halve, the generated tokens are not
// 4 5 6 7 8 1, the cached and uncached generations differ, or the config's
// parameter_count() disagrees with the built model.
// Uses only public headers (include/loom/) and nlohmann::json (Debian
// nlohmann-json3-dev) for the config file.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "loom/error.h"
#include "loom/generation.h"
#include "loom/lazy.h"
#include "loom/models.h"
#include "loom/optim.h"

namespace {

using loom::Tensor;

// ---- The config: what config.json holds, and what the registry needs. ----

struct TinyConfig : loom::PretrainedConfig {
  TinyConfig() {
    model_type = "tiny";
    tie_word_embeddings = false;
  }
  int64_t vocab_size = 16;
  int64_t hidden_size = 32;
  int64_t num_attention_heads = 4;
  int64_t intermediate_size = 64;
  int64_t max_position_embeddings = 32;
  double initializer_range = 0.02;

  int64_t head_dim() const { return hidden_size / num_attention_heads; }

  void validate() const {
    const std::vector<std::pair<const char*, int64_t>> sizes = {
        {"vocab_size", vocab_size},
        {"hidden_size", hidden_size},
        {"num_attention_heads", num_attention_heads},
        {"intermediate_size", intermediate_size},
        {"max_position_embeddings", max_position_embeddings}};
    for (const auto& [name, v] : sizes)
      LOOM_CHECK(v >= 1, "[TinyConfig] ", name, " must be >= 1, got ", v);
    LOOM_CHECK(hidden_size % num_attention_heads == 0, "[TinyConfig] hidden_size ", hidden_size,
               " is not divisible by num_attention_heads ", num_attention_heads);
  }

  static TinyConfig from_json_string(const std::string& text,
                                     const std::string& where = "<string>") {
    TinyConfig c;
    try {
      nlohmann::json j = nlohmann::json::parse(text);
      LOOM_CHECK(j.value("model_type", std::string("tiny")) == "tiny", "[config] ", where,
                 ": model_type is not 'tiny'");
      c.architectures = j.value("architectures", c.architectures);
      c.vocab_size = j.value("vocab_size", c.vocab_size);
      c.hidden_size = j.value("hidden_size", c.hidden_size);
      c.num_attention_heads = j.value("num_attention_heads", c.num_attention_heads);
      c.intermediate_size = j.value("intermediate_size", c.intermediate_size);
      c.max_position_embeddings = j.value("max_position_embeddings", c.max_position_embeddings);
      c.initializer_range = j.value("initializer_range", c.initializer_range);
    } catch (const nlohmann::json::exception& e) {
      loom::fail("[config] ", where, ": ", e.what());
    }
    return c;
  }
  std::string to_json_string() const {
    nlohmann::json j = {{"model_type", model_type},
                        {"architectures", architectures},
                        {"vocab_size", vocab_size},
                        {"hidden_size", hidden_size},
                        {"num_attention_heads", num_attention_heads},
                        {"intermediate_size", intermediate_size},
                        {"max_position_embeddings", max_position_embeddings},
                        {"initializer_range", initializer_range},
                        {"tie_word_embeddings", tie_word_embeddings}};
    return j.dump(2) + "\n";
  }

  // What loom checks before allocating (loom/model_config.h).
  double parameter_count() const {
    const double v = static_cast<double>(vocab_size), h = static_cast<double>(hidden_size);
    const double p = static_cast<double>(max_position_embeddings);
    const double i = static_cast<double>(intermediate_size);
    return v * h + p * h + 4 * h * h + 2 * h * i + 4 * h + v * h;  // + 2 norms' weight and bias
  }
  std::string size_text() const {
    return "hidden_size " + std::to_string(hidden_size) + ", vocab_size " +
           std::to_string(vocab_size) + ", max_position_embeddings " +
           std::to_string(max_position_embeddings);
  }
  std::vector<loom::ConfigTensor> config_tensors() const {
    return {{"embed_tokens.weight", {vocab_size, hidden_size}, "vocab_size, hidden_size"},
            {"embed_positions.weight",
             {max_position_embeddings, hidden_size},
             "max_position_embeddings, hidden_size"}};
  }
  int64_t max_positions() const { return max_position_embeddings; }
  std::vector<std::string> default_lora_targets() const { return {"q_proj", "v_proj"}; }
};
static_assert(loom::ModelConfig<TinyConfig>);

// ---- The model: TinyModel (the base) and TinyForCausalLM (+ lm_head). ----

class TinyModel : public loom::PretrainedModel {
 public:
  using Config = TinyConfig;
  explicit TinyModel(const TinyConfig& config) : config_(config) {
    config_.validate();
    loom::check_config_fits("[TinyModel]", config_);
    const int64_t h = config_.hidden_size;
    {
      loom::nn::NoInitGuard no_init;  // init_weights below draws every weight
      tokens_ = register_module("embed_tokens",
                                std::make_shared<loom::nn::Embedding>(config_.vocab_size, h));
      positions_ = register_module("embed_positions", std::make_shared<loom::nn::Embedding>(
                                                          config_.max_position_embeddings, h));
      norm1_ = register_module("norm1", std::make_shared<loom::nn::LayerNorm>(h));
      for (const char* name : {"q_proj", "k_proj", "v_proj", "o_proj"})
        proj_.push_back(
            register_module(name, std::make_shared<loom::nn::Linear>(h, h, /*bias=*/false)));
      norm2_ = register_module("norm2", std::make_shared<loom::nn::LayerNorm>(h));
      up_ = register_module("up_proj", std::make_shared<loom::nn::Linear>(
                                           h, config_.intermediate_size, /*bias=*/false));
      down_ = register_module("down_proj", std::make_shared<loom::nn::Linear>(
                                               config_.intermediate_size, h, /*bias=*/false));
    }
    if (!loom::nn::NoInitGuard::active()) init_weights();
  }
  std::string type_name() const override { return "TinyModel"; }
  std::string architecture() const override { return "TinyModel"; }
  std::string base_model_prefix() const override { return "model"; }
  bool is_base_model() const override { return true; }
  std::string config_json() const override {
    TinyConfig c = config_;
    c.architectures = {architecture()};
    return c.to_json_string();
  }
  void init_weights(const std::function<bool(const std::string&)>& select) override {
    for (const auto& [name, p] : named_parameters()) {
      if (!select(name)) continue;
      bool norm = name.rfind("norm", 0) == 0;
      bool bias = name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
      if (norm)
        loom::nn::init_constant_(p, bias ? 0.0 : 1.0);
      else
        loom::nn::init_normal_(p, 0.0, config_.initializer_range);
    }
  }
  using PretrainedModel::init_weights;

  loom::ModelOutput forward(const loom::ModelInputs& in) override {
    LOOM_CHECK(in.input_ids.defined() && in.input_ids.dim() == 2,
               "[TinyModel] input_ids must be [B,T]");
    const int64_t t = in.input_ids.size(1);
    Tensor positions = loom::arange(t, loom::DType::i64, in.input_ids.device());
    loom::ModelOutput out;
    out.last_hidden_state = hidden(in.input_ids, positions, nullptr);
    return out;
  }
  /// Hidden states [B,S,C] of input_ids [B,S] at `positions` [S]; with a
  /// cache, keys/values go into it at those rows (loom/kv_cache.h).
  Tensor hidden(const Tensor& ids, const Tensor& positions, loom::StaticCache* cache) {
    const int64_t b = ids.size(0), s = ids.size(1), heads = config_.num_attention_heads;
    const int64_t d = config_.head_dim();
    Tensor x = tokens_->forward(ids) + positions_->forward(positions);
    Tensor n = norm1_->forward(x);
    auto split = [&](const Tensor& y) {  // [B,S,C] -> [B,H,S,D]
      return loom::permute(loom::reshape(y, {b, s, heads, d}), {0, 2, 1, 3});
    };
    Tensor q = split(proj_[0]->forward(n)), k = split(proj_[1]->forward(n));
    Tensor v = split(proj_[2]->forward(n));
    Tensor a;
    if (cache) {
      auto [keys, values] = cache->update(0, k, v, positions);
      a = loom::scaled_dot_product_attention(q, keys, values, cache->attention_mask(positions));
    } else {
      a = loom::scaled_dot_product_attention(q, k, v, Tensor(), /*causal=*/true);
    }
    a = loom::reshape(loom::permute(a, {0, 2, 1, 3}), {b, s, heads * d});
    x = x + proj_[3]->forward(a);
    return x + down_->forward(loom::gelu(up_->forward(norm2_->forward(x))));
  }
  const TinyConfig& config() const { return config_; }

 private:
  TinyConfig config_;
  std::shared_ptr<loom::nn::Embedding> tokens_, positions_;
  std::shared_ptr<loom::nn::LayerNorm> norm1_, norm2_;
  std::vector<std::shared_ptr<loom::nn::Linear>> proj_;
  std::shared_ptr<loom::nn::Linear> up_, down_;
};

class TinyForCausalLM : public loom::CausalLM {
 public:
  using Config = TinyConfig;
  explicit TinyForCausalLM(const TinyConfig& config) {
    model_ = register_module("model", std::make_shared<TinyModel>(config));
    {
      loom::nn::NoInitGuard no_init;  // init_head draws the weight
      lm_head_ = register_module("lm_head", std::make_shared<loom::nn::Linear>(
                                                config.hidden_size, config.vocab_size, false));
    }
    init_head();
  }
  std::string type_name() const override { return "TinyForCausalLM"; }
  std::string architecture() const override { return "TinyForCausalLM"; }
  std::string base_model_prefix() const override { return "model"; }
  bool is_base_model() const override { return false; }
  std::string config_json() const override {
    TinyConfig c = config();
    c.architectures = {architecture()};
    return c.to_json_string();
  }
  void init_weights(const std::function<bool(const std::string&)>& select) override {
    model_->init_weights([&](const std::string& n) { return select("model." + n); });
    if (select("lm_head.weight")) init_head();
  }
  using PretrainedModel::init_weights;

  loom::ModelOutput forward(const loom::ModelInputs& in) override {
    loom::ModelOutput out = model_->forward(in);
    out.logits = lm_head_->forward(out.last_hidden_state);
    if (in.labels.defined()) out.loss = loom::causal_lm_loss(out.logits, in.labels);
    return out;
  }
  loom::ModelOutput forward_with_cache(const Tensor& input_ids, const Tensor& cache_position,
                                       loom::StaticCache& cache,
                                       int64_t logits_to_keep = 0) override {
    const int64_t s = input_ids.size(1);
    loom::ModelOutput out;
    out.last_hidden_state = model_->hidden(input_ids, cache_position, &cache);
    Tensor h = out.last_hidden_state;
    if (logits_to_keep > 0 && logits_to_keep < s) h = loom::slice(h, 1, s - logits_to_keep, s);
    out.logits = lm_head_->forward(h);
    return out;
  }
  loom::StaticCache new_static_cache(int64_t batch_size, int64_t max_cache_len) const override {
    const TinyConfig& c = config();
    LOOM_CHECK(max_cache_len >= 1 && max_cache_len <= c.max_position_embeddings,
               "[TinyForCausalLM] max_cache_len ", max_cache_len, " out of range");
    const Tensor& w = lm_head_->weight();
    return loom::StaticCache(1, batch_size, c.num_attention_heads, max_cache_len, c.head_dim(),
                             w.dtype(), w.device());
  }
  int64_t vocab_size() const override { return config().vocab_size; }
  int64_t max_positions() const override { return config().max_position_embeddings; }
  const loom::PretrainedConfig& pretrained_config() const override { return config(); }
  const TinyConfig& config() const { return model_->config(); }

 private:
  void init_head() const {
    if (!loom::nn::NoInitGuard::active())
      loom::nn::init_normal_(lm_head_->weight(), 0.0, config().initializer_range);
  }
  std::shared_ptr<TinyModel> model_;
  std::shared_ptr<loom::nn::Linear> lm_head_;
};

// ---- The registration: one line, at static initialisation. ----

const loom::RegisterModelType kRegisterTiny(loom::model_type_of<TinyConfig>(
    "tiny", {loom::causal_lm_class<TinyForCausalLM>("TinyForCausalLM"),
             loom::base_model_class<TinyModel>("TinyModel")}));

// The training data: the pattern 1 2 ... 8 repeated, as one [1, 24] batch.
std::vector<int64_t> pattern_ids(int64_t n) {
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back(1 + i % 8);
  return ids;
}

int run(const std::string& out_dir, int steps) {
  const loom::Device dev("lazy");
  loom::manual_seed(0);
  // Built as `loom train --model_type tiny` would: from the registry's default config.
  const loom::ModelTypeEntry& entry = loom::model_type_entry("tiny");
  std::shared_ptr<loom::PretrainedModel> built =
      entry.for_task(loom::kTaskCausalLM)->make(entry.default_config_json(), "tiny defaults");
  built->to(dev);
  built->train();
  auto lm = std::dynamic_pointer_cast<loom::CausalLM>(built);
  std::cout << "TinyForCausalLM: " << lm->num_parameters() << " parameters, LoRA targets "
            << loom::default_lora_target_modules("tiny").front() << ", ...\n";

  Tensor ids = loom::tensor_i64(pattern_ids(24), {1, 24}, dev);
  loom::optim::AdamW opt(lm->parameters(), {.lr = 1e-2, .weight_decay = 0.0});
  double first = 0, last = 0;
  loom::ModelInputs batch;
  batch.input_ids = ids;
  batch.labels = ids;  // shifted inside the model (causal_lm_loss)
  for (int step = 0; step < steps; ++step) {
    Tensor loss = lm->forward(batch).loss;
    loss.backward();
    opt.step();
    opt.zero_grad();
    loom::lazy::mark_step();
    double value = loss.item();
    if (step == 0) first = value;
    last = value;
    if (step % 10 == 0 || step == steps - 1)
      std::cout << "step " << step << " loss " << value << "\n";
  }
  lm->save_pretrained(out_dir);

  // Loaded back through the registry: config.json names TinyForCausalLM.
  std::shared_ptr<loom::PretrainedModel> loaded = loom::auto_from_pretrained(out_dir, dev);
  auto reloaded = std::dynamic_pointer_cast<loom::CausalLM>(loaded);
  LOOM_CHECK(reloaded && loaded->architecture() == "TinyForCausalLM", "auto_from_pretrained gave ",
             loaded->architecture());
  loom::GenerationConfig gc;
  gc.max_new_tokens = 6;
  Tensor prompt = loom::tensor_i64({1, 2, 3}, {1, 3}, dev);
  std::vector<int64_t> got = loom::generate(*reloaded, prompt, gc).sequences.to_vector<int64_t>();
  gc.use_cache = false;  // the whole sequence each step: checks forward_with_cache
  const bool cache_agrees =
      loom::generate(*reloaded, prompt, gc).sequences.to_vector<int64_t>() == got;
  std::cout << "generated:";
  for (int64_t id : got) std::cout << " " << id;
  std::cout << "\n";
  const std::vector<int64_t> want = {1, 2, 3, 4, 5, 6, 7, 8, 1};
  const bool counted = static_cast<double>(lm->num_parameters()) ==
                       TinyConfig().parameter_count();  // the size check counts right
  bool ok = last < first / 2 && got == want && counted && cache_agrees;
  std::cout << (ok ? "ok" : "FAILED") << ": loss " << first << " -> " << last
            << (got == want ? ", the pattern continues" : ", expected 1 2 3 4 5 6 7 8 1")
            << (counted ? "" : ", parameter_count() disagrees with the model")
            << (cache_agrees ? "" : ", generation with and without the KV cache differ") << "\n";
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc > 1 ? argv[1] : "out/custom_model", argc > 2 ? std::stoi(argv[2]) : 60);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
