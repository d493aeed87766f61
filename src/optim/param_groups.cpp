// The Hugging Face Trainer's weight-decay grouping (loom/optim.h):
// Trainer.get_decay_parameter_names (transformers/trainer.py) excludes
// parameters whose lowercased name matches one of the regexes "bias",
// "layernorm", "rmsnorm", "(?:^|\.)norm(?:$|\.)", "_norm(?:$|\.)", and every
// parameter of an nn.LayerNorm module. loom sees names only, so the module
// test becomes a name test on the module path (GPT-2's ln_1 / ln_2 / ln_f).
// Trainer.create_optimizer then builds {decay params, weight_decay} and
// {the rest, 0.0}, keeping only parameters that require grad.
#include <cctype>
#include <set>
#include <sstream>

#include "loom/optim.h"

namespace loom::optim {
namespace {

std::vector<std::string> split_dots(const std::string& name) {
  std::vector<std::string> parts;
  std::stringstream in(name);
  std::string part;
  while (std::getline(in, part, '.')) parts.push_back(part);
  if (!name.empty() && name.back() == '.') parts.push_back("");
  return parts;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
bool all_digits(const std::string& s, size_t from) {
  if (from >= s.size()) return false;
  for (size_t i = from; i < s.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

// A module name that stands for a LayerNorm module in the models loom knows:
// ln, ln_1, ln_f, ln1, final_ln, norm1.
bool is_layer_norm_module(const std::string& c) {
  if (c == "ln" || starts_with(c, "ln_") || ends_with(c, "_ln")) return true;
  if (starts_with(c, "ln") && all_digits(c, 2)) return true;
  return starts_with(c, "norm") && all_digits(c, 4);
}

}  // namespace

bool is_no_decay_name(const std::string& name) {
  std::string lower = name;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  // The Trainer's name regexes.
  if (lower.find("bias") != std::string::npos || lower.find("layernorm") != std::string::npos ||
      lower.find("rmsnorm") != std::string::npos)
    return true;
  std::vector<std::string> parts = split_dots(lower);
  for (const std::string& c : parts)
    if (c == "norm" || ends_with(c, "_norm")) return true;
  // Stand-in for isinstance(module, nn.LayerNorm): every component but the last.
  for (size_t i = 0; i + 1 < parts.size(); ++i)
    if (is_layer_norm_module(parts[i])) return true;
  return false;
}

std::vector<ParamGroup> weight_decay_groups(
    const std::vector<std::pair<std::string, Tensor>>& named_params, double weight_decay) {
  ParamGroup decay, no_decay;
  decay.options["weight_decay"] = weight_decay;
  no_decay.options["weight_decay"] = 0.0;
  std::set<const TensorImpl*> seen;
  for (const auto& [name, p] : named_params) {
    if (!p.defined() || !p.requires_grad() || !seen.insert(p.impl()).second) continue;
    ParamGroup& g = is_no_decay_name(name) ? no_decay : decay;
    g.params.push_back(p);
    g.names.push_back(name);
  }
  return {std::move(decay), std::move(no_decay)};
}

}  // namespace loom::optim
