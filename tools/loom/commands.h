// The `loom` CLI's subcommands. Each subcommand lives in its own file
// (tools/loom/<name>.cpp) and exposes one function that adds itself to the
// top-level CLI11 app; main.cpp lists those functions in kCommands.
//
// Adding a subcommand:
//   1. write tools/loom/<name>.cpp defining `void add_<name>_command(CLI::App&)`,
//   2. declare it below,
//   3. add it to kCommands in main.cpp.
// The added CLI::App* must set a callback (app->callback(...)) that does the
// work; it may throw loom::Error for user mistakes, which main() turns into
// one "loom: error: ..." line and exit code 1.
#pragma once

#include <CLI/CLI.hpp>

namespace loom::cli {

/// Signature of a subcommand registration function.
using AddCommand = void (*)(CLI::App& app);

/// `loom info`: prints the version and build configuration (compiler,
/// C++ standard, sanitizers, assertions, OpenMP threads, devices).
void add_info_command(CLI::App& app);

/// `loom generate`: continues --prompt with a GPT-2 model (greedy, or
/// sampled with temperature / top-k / top-p), static KV cache (generate.cpp).
void add_generate_command(CLI::App& app);

/// `loom inspect PATH`: tensor names, dtypes, shapes and parameter count of a
/// .safetensors file, model directory or checkpoint (+ its training state),
/// and the metrics report of a run's lazy_metrics.json.
void add_inspect_command(CLI::App& app);

/// `loom plot OUTPUT_DIR`: training_curves.svg (+ .png) of a run (plot.cpp).
void add_plot_command(CLI::App& app);

/// `loom tokenize`: one JSON array of ids per JSON-string line of a file.
void add_tokenize_command(CLI::App& app);

/// `loom train`: trains or fine-tunes a model (train.cpp; flags in job_args.h
/// and TrainingArguments, docs/cli.md).
void add_train_command(CLI::App& app);

/// `loom evaluate`: evaluates a model on validation data (evaluate.cpp).
void add_evaluate_command(CLI::App& app);

}  // namespace loom::cli
