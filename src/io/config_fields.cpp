// The per-field rules of io/config_fields.h, with the messages validate() has always given.
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

}  // namespace loom::io
