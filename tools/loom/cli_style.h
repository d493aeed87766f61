// One flag style and one help layout for every `loom` subcommand (issue 42,
// row 10): a CLI11 formatter that prints each option as `--name TYPE` with
// train's type names (STRING, INT, FLOAT, [BOOL]) and its default as
// "[default: x]" at the end of the help text, whatever subcommand built it;
// and CLI11's parse errors in loom's words ("--prompt needs a value").
// Assumes CLI11 2.x (Formatter::make_option_opts / make_option_desc).
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

namespace loom::cli {

/// The formatter main() installs on the app before adding subcommands
/// (subcommands copy it when created).
std::shared_ptr<CLI::Formatter> loom_help_formatter();

/// The one-line message for a CLI11 parse error (after "loom: error: "):
/// "--prompt: needs a value" for CLI11's "--prompt: 1 required TEXT
/// missing", "unknown flag '-v' (see loom --help; the version is
/// --version)" for "The following argument was not expected: -v", "--x:
/// cannot read 'y' (see --help for its type)" for a failed conversion;
/// other messages unchanged.
std::string parse_error_message(const CLI::ParseError& e);

}  // namespace loom::cli
