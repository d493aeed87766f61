// libFuzzer harness: the flag parsing of `loom train` / `loom evaluate`
// (tools/loom/flags.h, job_args.h) and TrainingArguments. The first input
// byte picks the path:
//   even  a command line: the rest split at '\n' into arguments, parsed by
//         CLI11 with the job FlagSet, then parse_job_command() and
//         TrainingArguments::validate()
//   odd   TrainingArguments::from_json(rest), then validate()
// Accepted outcomes: success, loom::Error, or CLI::ParseError (main() prints
// both as one "loom: error:" line). `--config FILE` arguments are skipped:
// they read a file the fuzzer names (e.g. /dev/zero), not input it controls.
#include <CLI/CLI.hpp>

#include "flags.h"
#include "fuzz_util.h"
#include "job_args.h"
#include "loom/training_args.h"

namespace {

bool names_a_config_file(const std::string& arg) {
  return arg.rfind("--config", 0) == 0 && arg.rfind("--config_", 0) != 0;
}

void parse_command_line(std::string_view text) {
  std::vector<std::string> args = loom::fuzz::split(text, '\n');
  for (const std::string& a : args) {
    if (names_a_config_file(a)) return;
  }
  std::vector<char*> argv;
  std::string program = "loom-train";
  argv.push_back(program.data());
  for (std::string& a : args) argv.push_back(a.data());
  CLI::App app{"fuzz", "loom-train"};
  loom::cli::FlagSet flags = loom::cli::make_job_flag_set("loom train");
  flags.add_to(app);
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError&) {
    return;  // CallForHelp included: main() prints help or one error line
  }
  loom::cli::JobCommand cmd = loom::cli::parse_job_command(flags, app, "loom train");
  cmd.training.validate();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view rest = loom::fuzz::as_text(data + 1, size - 1);
  loom::fuzz::run_guarded("cli_flags", [&] {
    if (data[0] % 2 == 0) {
      parse_command_line(rest);
      return;
    }
    loom::TrainingArguments args = loom::TrainingArguments::from_json(std::string(rest), "<fuzz>");
    args.validate();
  });
  return 0;
}
