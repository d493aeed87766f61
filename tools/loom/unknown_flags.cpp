// check_unknown_flags (unknown_flags.h): the closest long option name of the
// subcommand by edit distance, within max(2, |name| / 3) edits as
// FlagSet::suggest (flags.cpp) allows.
#include "unknown_flags.h"

#include <algorithm>
#include <cstdint>

#include "flags.h"
#include "loom/error.h"

namespace loom::cli {

void check_unknown_flags(const CLI::App& app, const std::string& command) {
  std::vector<std::string> left = app.remaining();
  if (left.empty()) return;
  const std::string& arg = left.front();
  if (arg.rfind("-", 0) != 0) fail("[loom ", command, "] unexpected argument '", arg, "'");
  std::string name = arg.substr(std::min(arg.find_first_not_of('-'), arg.size()));
  name = name.substr(0, name.find('='));
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& known : opt->get_lnames()) {
      size_t d = edit_distance(name, known);
      if (d < best_d) best_d = d, best = known;
    }
  }
  if (best.empty() || best_d > std::max<size_t>(2, name.size() / 3))
    fail("[loom ", command, "] unknown flag '", arg, "' (see loom ", command, " --help)");
  fail("[loom ", command, "] unknown flag '", arg, "' (did you mean --", best, "?)");
}

}  // namespace loom::cli
