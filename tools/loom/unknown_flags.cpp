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
  std::vector<std::string> known;
  for (const CLI::Option* opt : app.get_options())
    for (const std::string& n : opt->get_lnames()) known.push_back(n);
  fail_unknown_argument(left.front(), "loom " + command, known);
}

}  // namespace loom::cli
