// Trainer::save_metrics: transformers' <split>_results.json and
// all_results.json (json.dump(indent=4, sort_keys=True)), as `loom train`
// writes them. Assumes Logs is a sorted map, so nlohmann's object keeps its order.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "io/json_parse.h"
#include "loom/error.h"
#include "loom/trainer.h"
#include "train/ddp.h"

namespace loom {
namespace fs = std::filesystem;

namespace {

void write_metrics_file(const fs::path& path, const nlohmann::json& j) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << j.dump(4) << "\n";
  out.flush();
  LOOM_CHECK(out.good(), "[Trainer] ", path.string(), ": cannot write file");
}

}  // namespace

void Trainer::save_metrics(const std::string& split, const Logs& metrics, bool combined) const {
  if (!train::is_world_process_zero()) return;
  const fs::path dir = args().output_dir;
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : metrics) j[k] = v;
  write_metrics_file(dir / (split + "_results.json"), j);
  if (!combined) return;
  const fs::path all = dir / "all_results.json";
  nlohmann::json merged = nlohmann::json::object();
  if (fs::exists(all)) {
    std::ifstream in(all, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    merged = io::parse_json(text.str(), "[Trainer] " + all.string());
    LOOM_CHECK(merged.is_object(), "[Trainer] ", all.string(), ": expected a JSON object");
  }
  merged.update(j);
  write_metrics_file(all, merged);
}

}  // namespace loom
