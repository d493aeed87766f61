// Unknown-flag reporting for the `loom` subcommands whose flags are plain
// CLI11 options (generate, inspect, tokenize): the subcommand is created
// with allow_extras(), and its callback calls check_unknown_flags() first,
// so `--top_kk 5` fails as one "loom: error:" line with a suggestion taken
// from the subcommand's own long option names (edit distance, flags.h).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace loom::cli {

/// Throws loom::Error "[loom <command>] unknown flag '--x' (did you mean
/// --y?)" for the first leftover argument of `app` that starts with '-'
/// (without "did you mean" when nothing is close), or "[loom <command>]
/// unexpected argument 'x'" for a stray word. Does nothing when none is left.
void check_unknown_flags(const CLI::App& app, const std::string& command);

}  // namespace loom::cli
