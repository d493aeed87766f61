// Levenshtein edit distance, for "did you mean" suggestions (unknown CLI
// flags, TrainingArguments fields, config keys). Assumes short ASCII names:
// O(|a|·|b|) time, O(|b|) memory, bytes compared one by one.
#pragma once

#include <cstddef>
#include <string>

namespace loom {

/// The least number of single-byte insertions, deletions and substitutions
/// that turn `a` into `b` (Levenshtein 1966). Never throws.
size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace loom
