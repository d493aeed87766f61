// `loom inspect PATH`: what a weights file or a saved model holds, without
// loading it into a model. PATH is a .safetensors file, a save_pretrained
// directory (model.safetensors, or shards listed by
// model.safetensors.index.json), a PEFT adapter directory
// (adapter_model.safetensors + adapter_config.json: a LoRA run's output) or
// a Trainer checkpoint directory of either kind (plus trainer_state.json). Prints each tensor's
// name, dtype and shape, the tensor count and the total parameter count (elements over all tensors:
// tied weights are stored once); for a checkpoint also global_step, epoch,
// best_metric, best_model_checkpoint and the last log_history entry. A
// directory holding lazy_metrics.json (a `loom train` output_dir), or that
// file itself, also gets the metrics report: timers with count, total, mean
// and percentiles and counters as PyTorch/XLA's metrics_report() prints
// them, then each recompile's cause.
// Assumes files are read-only here: they are memory-mapped, never written.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "io/json_parse.h"
#include "io/pretrained_files.h"
#include "loom/error.h"
#include "loom/metrics.h"
#include "loom/safetensors.h"
#include "unknown_flags.h"

namespace loom::cli {
namespace {

namespace fs = std::filesystem;

// PEFT's adapter weights file (peft_model.cpp writes it).
constexpr const char* kAdapterWeights = "adapter_model.safetensors";

struct Row {
  std::string name, dtype, shape;
  int64_t numel = 0;
};

Row row_of(const safetensors::TensorInfo& info) {
  return {info.name, safetensors::dtype_code(info.dtype), to_string(info.shape), numel(info.shape)};
}

void print_weights(const std::string& dir);

void print_rows(const std::vector<Row>& rows) {
  size_t width = 4;
  for (const Row& r : rows) width = std::max(width, r.name.size());
  std::cout << std::left;
  std::cout.width(static_cast<std::streamsize>(width + 2));
  std::cout << "name"
            << "dtype  shape\n";
  int64_t total = 0;
  for (const Row& r : rows) {
    std::cout.width(static_cast<std::streamsize>(width + 2));
    std::cout << r.name;
    std::cout.width(7);
    std::cout << r.dtype << r.shape << "\n";
    total += r.numel;
  }
  std::cout << "tensors: " << rows.size() << "\n"
            << "parameters: " << total << "\n";
}

// "key: value" lines of a Trainer checkpoint's trainer_state.json.
void print_trainer_state(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("[inspect] cannot open ", path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  io::check_json_depth(text, "[inspect] " + path);
  nlohmann::json state = nlohmann::json::parse(text, nullptr, false);
  if (state.is_discarded() || !state.is_object()) fail("[inspect] ", path, ": not a JSON object");
  std::cout << "trainer_state.json:\n";
  for (const char* key : {"global_step", "epoch", "best_metric", "best_model_checkpoint"})
    std::cout << "  " << key << ": " << (state.contains(key) ? state[key].dump() : "null") << "\n";
  const nlohmann::json* history = state.contains("log_history") ? &state["log_history"] : nullptr;
  if (history && history->is_array() && !history->empty())
    std::cout << "  log_history[-1]: " << history->back().dump() << "\n";
  else
    std::cout << "  log_history[-1]: none\n";
}

// lazy_metrics.json as PyTorch/XLA's metrics_report() (loom::metrics::format_report).
void print_metrics_report(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("[inspect] cannot open ", path);
  std::stringstream text;
  text << in.rdbuf();
  std::cout << "lazy_metrics.json:\n" << metrics::format_report(text.str(), path);
}

// A PEFT adapter (adapter_config.json + adapter_model.safetensors, as a LoRA
// run's output_dir and checkpoints hold them): its config's main fields,
// then its tensors.
void print_adapter(const fs::path& d) {
  const std::string weights = (d / kAdapterWeights).string();
  const std::string config_path = (d / "adapter_config.json").string();
  std::cout << weights << " (PEFT adapter";
  if (fs::exists(config_path)) {
    std::ifstream in(config_path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    nlohmann::json c = io::parse_json(text.str(), "[inspect] " + config_path);
    if (!c.is_object()) fail("[inspect] ", config_path, ": not a JSON object");
    for (const char* key :
         {"peft_type", "r", "lora_alpha", "target_modules", "base_model_name_or_path"})
      if (c.contains(key)) std::cout << ", " << key << " " << c[key].dump();
  }
  std::cout << ")\n";
  safetensors::File file = safetensors::File::open(weights);
  std::vector<Row> rows;
  for (const auto& info : file.tensors()) rows.push_back(row_of(info));
  print_rows(rows);
}

void inspect_directory(const std::string& dir) {
  const fs::path d = dir;
  const std::string metrics_file = (d / "lazy_metrics.json").string();
  const bool has_weights =
      fs::exists(d / io::kWeightsFile) || fs::exists(d / io::kWeightsIndexFile);
  const bool has_adapter = fs::exists(d / kAdapterWeights);
  if (has_weights || (!has_adapter && !fs::exists(metrics_file))) print_weights(dir);
  if (has_adapter) print_adapter(d);
  if (fs::exists(d / "adapter" / kAdapterWeights))  // --merge_lora: the adapter beside the merge
    std::cout << "adapter: " << (d / "adapter").string() << " (loom inspect it)\n";
  std::string state = (d / "trainer_state.json").string();
  if (fs::exists(state)) print_trainer_state(state);
  if (fs::exists(metrics_file)) print_metrics_report(metrics_file);
}

void print_weights(const std::string& dir) {
  io::PretrainedWeights weights = io::PretrainedWeights::open(dir);
  std::cout << dir << ": ";
  if (weights.files().size() == 1)
    std::cout << fs::path(weights.files()[0].path()).filename().string() << "\n";
  else
    std::cout << weights.files().size() << " shards (" << io::kWeightsIndexFile << ")\n";
  std::vector<Row> rows;
  for (const auto& e : weights.entries()) rows.push_back(row_of(*e.info));
  print_rows(rows);
}

void run_inspect(const std::string& path) {
  if (path.empty()) fail("[loom inspect] PATH is required: a .safetensors file or a directory");
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) fail("[inspect] ", path, ": no such file or directory");
  if (fs::is_directory(st)) return inspect_directory(path);
  if (fs::path(path).extension() == ".json") return print_metrics_report(path);
  safetensors::File file = safetensors::File::open(path);
  std::cout << path << ":\n";
  std::vector<Row> rows;
  for (const auto& info : file.tensors()) rows.push_back(row_of(info));
  print_rows(rows);
  for (const auto& [key, value] : file.metadata())
    std::cout << "metadata " << key << ": " << value << "\n";
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "inspect",
      "List the tensors of a .safetensors file, model directory or checkpoint, and the metrics "
      "report of a run (lazy_metrics.json)");
  cmd->add_option("path", *path,
                  "A .safetensors file, a model directory, a checkpoint, a `loom train` "
                  "output_dir or a lazy_metrics.json");
  cmd->allow_extras();
  cmd->callback([path, cmd] {
    check_unknown_flags(*cmd, "inspect");
    run_inspect(*path);
  });
}

}  // namespace loom::cli
