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
  if (std::string answer = hf_flag_answer(name); !answer.empty())
    fail("[loom ", command, "] --", name, ": not supported: ", answer);
  std::vector<std::string> known;
  for (const CLI::Option* opt : app.get_options())
    for (const std::string& n : opt->get_lnames()) known.push_back(n);
  std::string best = closest_name(name, known);
  if (best.empty())
    fail("[loom ", command, "] unknown flag '", arg, "' (see loom ", command, " --help)");
  fail("[loom ", command, "] unknown flag '", arg, "' (did you mean --", best, "?)");
}

}  // namespace loom::cli
