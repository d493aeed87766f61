// Levenshtein edit distance and the nearest-name rule, for "did you mean"
// suggestions (unknown CLI flags and subcommands, TrainingArguments fields,
// config keys). Assumes short ASCII names:
// O(|a|·|b|) time, O(|b|) memory, bytes compared one by one.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace loom {

/// The least number of single-byte insertions, deletions and substitutions
/// that turn `a` into `b` (Levenshtein 1966). Never throws.
size_t edit_distance(const std::string& a, const std::string& b);

/// The "did you mean" rule: the candidate nearest to `word` in edit distance
/// (the first of equally near ones), or "" when none is within `max_distance`
/// edits. Never throws.
std::string closest_name(const std::string& word, const std::vector<std::string>& candidates,
                         size_t max_distance);
/// closest_name with the limit every unknown-name message uses:
/// max(2, |word| / 3) edits.
std::string closest_name(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace loom
