// prepare_job: loom::build_job (loom/job.h) for a `loom train` / `loom
// evaluate` command line, plus the results files and printed metrics blocks
// of transformers' Trainer.save_metrics / log_metrics.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "job.h"
#include "loom/error.h"

namespace loom::cli {
namespace fs = std::filesystem;

namespace {

// "0:01:02.50" as transformers' metrics_format prints runtimes.
std::string format_runtime(double seconds) {
  int64_t whole = static_cast<int64_t>(seconds);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%" PRId64 ":%02" PRId64 ":%05.2f", whole / 3600,
                (whole / 60) % 60, seconds - static_cast<double>(whole / 60 * 60));
  return buf;
}

std::string format_metric(const std::string& key, double v) {
  char buf[64];
  if (key.size() >= 8 && key.compare(key.size() - 8, 8, "_runtime") == 0) return format_runtime(v);
  if (key == "total_flos") {
    std::snprintf(buf, sizeof buf, "%.0fGF", v / 1e9);
  } else if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.4f", v);
  }
  return buf;
}

}  // namespace

Job prepare_job(const JobCommand& cmd, TrainingArguments& training, bool want_train,
                bool want_eval) {
  JobOptions options{.want_train = want_train, .want_eval = want_eval};
  for (const auto& [name, value] : cmd.given) options.given.insert(name);
  return build_job(cmd.job, training, options);
}

void write_metrics_json(const std::string& path, const Logs& metrics) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : metrics) j[k] = v;
  if (fs::path(path).has_parent_path()) fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << j.dump(4) << "\n";
  out.flush();
  LOOM_CHECK(out.good(), "[loom] ", path, ": cannot write file");
}

void print_metrics(const std::string& split, const Logs& metrics) {
  size_t kw = 0, vw = 0;
  std::vector<std::pair<std::string, std::string>> rows;
  for (const auto& [k, v] : metrics) {
    rows.emplace_back(k, format_metric(k, v));
    kw = std::max(kw, k.size());
    vw = std::max(vw, rows.back().second.size());
  }
  std::printf("***** %s metrics *****\n", split.c_str());
  for (const auto& [k, v] : rows)
    std::printf("  %-*s = %*s\n", static_cast<int>(kw), k.c_str(), static_cast<int>(vw), v.c_str());
  std::fflush(stdout);
}

}  // namespace loom::cli
