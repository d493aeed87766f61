// The per-field rules of io/config_fields.h, with the messages validate() has always given,
// and the checks GPT-2's and BERT's configs share.
#include "io/config_fields.h"

#include "loom/error.h"

namespace loom::io {

void check_field_rule(const char* config, const std::string& field, FieldRule rule, int64_t v) {
  if (rule == FieldRule::kSize) {
    LOOM_CHECK(v >= 1, "[", config, "] ", field, " must be >= 1, got ", v);
  } else if (rule != FieldRule::kNone) {
    check_field_rule(config, field, rule, static_cast<double>(v));
  }
}

void check_field_rule(const char* config, const std::string& field, FieldRule rule, double v) {
  switch (rule) {
    case FieldRule::kNone:
      return;
    case FieldRule::kSize:
      LOOM_CHECK(v >= 1, "[", config, "] ", field, " must be >= 1, got ", v);
      return;
    case FieldRule::kProbability:
      LOOM_CHECK(v >= 0 && v < 1, "[", config, "] ", field, " must be in [0, 1), got ", v);
      return;
    case FieldRule::kPositive:
      LOOM_CHECK(v > 0, "[", config, "] ", field, " must be > 0, got ", v);
      return;
  }
}

bool known_activation(const std::string& name) {
  for (const char* k : {"gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "quick_gelu", "relu",
                        "silu", "swish", "tanh"})
    if (name == k) return true;
  return false;
}

void check_no_cross_attention(const char* config, const PretrainedConfig& c) {
  auto it = c.extra.find("add_cross_attention");
  LOOM_CHECK(it == c.extra.end() || it->second != "true", "[", config,
             "] add_cross_attention is not supported");
}

}  // namespace loom::io
