// The global functions a chat template can call: transformers' raise_exception,
// strftime_now, namespace and dict, and Jinja's range.
// Assumes: raise_exception's EvalError message starts "raise_exception: " (the evaluator adds
// the template and line).
#pragma once

#include <ctime>
#include <optional>

#include "data/chat_template/value.h"

namespace loom::jinja {

/// The globals. strftime_now formats `now` (local time), or the current time when nullopt.
Dict make_globals(std::optional<std::time_t> now);

}  // namespace loom::jinja
