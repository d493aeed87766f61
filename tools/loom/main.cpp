// Entry point of the `loom` command-line tool: builds the CLI11 app, adds the
// subcommands listed in kCommands (declared in commands.h, one file each),
// parses argv and runs the chosen subcommand.
// Assumes LOOM_VERSION is defined by the build (CMake's project version).
// Exit codes: 0 success, 1 a user error (loom::Error or bad flags), 2 an
// unexpected internal failure. In a job of several ranks (mpirun) an error
// line names the rank ("loom: error: [rank 1] ...") and ends the whole job
// (dist::ProcessGroup::abort: the other ranks die even inside a collective).
#include <exception>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli_style.h"
#include "commands.h"
#include "core/edit_distance.h"
#include "loom/dist.h"
#include "loom/error.h"
#include "loom/omp_env.h"

#ifndef LOOM_VERSION
#error "LOOM_VERSION must be defined by the build"
#endif

namespace {

// Every subcommand, in the order `loom --help` lists them.
constexpr loom::cli::AddCommand kCommands[] = {
    loom::cli::add_info_command,     loom::cli::add_generate_command,
    loom::cli::add_inspect_command,  loom::cli::add_plot_command,
    loom::cli::add_tokenize_command, loom::cli::add_train_command,
    loom::cli::add_evaluate_command,
};

// For `loom frobnicate` (CLI11 would say "The following argument was not
// expected"): "unknown subcommand 'frobnicate' (did you mean 'generate'?;
// subcommands: info, ...)", or "" when `word` is a flag or a subcommand.
std::string unknown_subcommand_message(CLI::App& app, const std::string& word) {
  if (word.empty() || word[0] == '-') return "";
  std::vector<std::string> subcommands;
  std::string names;
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    if (sub->get_name() == word) return "";
    subcommands.push_back(sub->get_name());
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  std::string best = loom::closest_name(word, subcommands, 2);  // within 2 edits
  std::string hint = best.empty() ? "" : "did you mean '" + best + "'?; ";
  return "unknown subcommand '" + word + "' (" + hint + "subcommands: " + names + ")";
}

// For a bare `loom`: "a subcommand is required (info, generate, ...; see loom --help)".
std::string missing_subcommand_message(CLI::App& app) {
  std::string names;
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    names += (names.empty() ? "" : ", ") + sub->get_name();
  return "a subcommand is required (" + names + "; see loom --help)";
}

// With several ranks, a failing rank ends the job (MPI_Abort) so that no
// other rank waits forever in a collective; one rank just returns.
void end_other_ranks(int code) {
  if (loom::dist::world_size() > 1) loom::dist::default_process_group().abort(code);
}

}  // namespace

int main(int argc, char** argv) {
  loom::apply_omp_env_defaults(argv);  // OpenMP spin limit, unless the user set one (docs/)
  CLI::App app{"loom: train and fine-tune Transformer models with lazy tensors", "loom"};
  app.set_version_flag("--version", std::string("loom ") + LOOM_VERSION);
  app.require_subcommand(0, 1);
  // A repeated flag keeps its last value on every subcommand, as train's flag
  // table does (argparse's rule); subcommands copy these defaults.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.formatter(loom::cli::loom_help_formatter());  // one help layout (subcommands copy it)
  for (loom::cli::AddCommand add : kCommands) add(app);

  if (argc > 1) {
    std::string unknown = unknown_subcommand_message(app, argv[1]);
    if (!unknown.empty()) {
      std::cerr << "loom: error: " << unknown << "\n";
      return 1;
    }
  }
  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) {
      // No subcommand: one error line as every user error, then what there is.
      std::cerr << "loom: error: " << missing_subcommand_message(app) << "\n\n" << app.help();
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
    std::cerr << "loom: error: " << loom::cli::parse_error_message(e) << "\n";
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    // One write per line: under mpirun the ranks share stderr, and separate
    // writes of the prefix and the message interleave between ranks.
    std::cerr << "loom: error: " + loom::dist::rank_prefix() + e.what() + "\n"
              << std::flush;  // a path the user gave
    end_other_ranks(1);
    return 1;
  } catch (const loom::Error& e) {
    std::cerr << "loom: error: " + loom::dist::rank_prefix() + e.what() + "\n" << std::flush;
    end_other_ranks(1);
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "loom: internal error: " + loom::dist::rank_prefix() + e.what() + "\n"
              << std::flush;
    end_other_ranks(2);
    return 2;
  }
  return 0;
}
