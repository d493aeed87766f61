// Entry point of the `loom` command-line tool: builds the CLI11 app, adds the
// subcommands listed in kCommands (declared in commands.h, one file each),
// parses argv and runs the chosen subcommand.
// Assumes LOOM_VERSION is defined by the build (CMake's project version).
// Exit codes: 0 success, 1 a user error (loom::Error or bad flags), 2 an
// unexpected internal failure.
#include <exception>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "loom/error.h"

#ifndef LOOM_VERSION
#error "LOOM_VERSION must be defined by the build"
#endif

namespace {

// Every subcommand, in the order `loom --help` lists them.
constexpr loom::cli::AddCommand kCommands[] = {
    loom::cli::add_info_command,    loom::cli::add_generate_command,
    loom::cli::add_inspect_command, loom::cli::add_tokenize_command,
    loom::cli::add_train_command,   loom::cli::add_evaluate_command,
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"loom: train and fine-tune Transformer models with lazy tensors", "loom"};
  app.set_version_flag("--version", std::string("loom ") + LOOM_VERSION);
  app.require_subcommand(0, 1);
  for (loom::cli::AddCommand add : kCommands) add(app);

  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) {
      // No subcommand: show what there is, and fail like other multi-command tools.
      std::cerr << app.help();
      return 1;
    }
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A missing or unconvertible value, an excluded pair...: one line, as
    // every other user error (docs/cli.md).
    std::cerr << "loom: error: " << e.what() << "\n";
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << "loom: error: " << e.what() << "\n";  // a path the user gave
    return 1;
  } catch (const loom::Error& e) {
    std::cerr << "loom: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "loom: internal error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
