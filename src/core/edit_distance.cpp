// Levenshtein distance by the two-row dynamic programme (Wagner-Fischer 1974),
// and the nearest candidate name built on it.
#include "core/edit_distance.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace loom {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_name(const std::string& word, const std::vector<std::string>& candidates,
                         size_t max_distance) {
  const std::string* best = nullptr;
  size_t best_d = SIZE_MAX;
  for (const std::string& c : candidates)
    if (size_t d = edit_distance(word, c); d < best_d) best_d = d, best = &c;
  return best && best_d <= max_distance ? *best : std::string();
}

std::string closest_name(const std::string& word, const std::vector<std::string>& candidates) {
  return closest_name(word, candidates, std::max<size_t>(2, word.size() / 3));
}

}  // namespace loom
