// What the user sees while training: PrinterCallback's plain log lines (a
// Python dict with values as %.4g, as transformers' PrinterCallback prints)
// and ProgressCallback's tqdm-style bar on a terminal (stderr): percentage,
// bar, step/total, elapsed<remaining, it/s and the last logged loss.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <string>

#include "loom/callbacks.h"

namespace loom {
namespace {

double steady_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string format_g4(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// "MM:SS" or "H:MM:SS", as tqdm's format_interval.
std::string format_interval(double seconds) {
  if (!(seconds >= 0) || seconds > 1e8) return "?";
  int64_t t = static_cast<int64_t>(seconds + 0.5);
  int64_t h = t / 3600, m = (t / 60) % 60, s = t % 60;
  char buf[32];
  if (h > 0) {
    std::snprintf(buf, sizeof buf, "%" PRId64 ":%02" PRId64 ":%02" PRId64, h, m, s);
  } else {
    std::snprintf(buf, sizeof buf, "%02" PRId64 ":%02" PRId64, m, s);
  }
  return buf;
}

}  // namespace

std::string format_logs(const Logs& logs) {
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : logs) {
    if (k == "total_flos") continue;
    out += (first ? "'" : ", '") + k + "': '" + format_g4(v) + "'";
    first = false;
  }
  return out + "}";
}

void PrinterCallback::on_log(const TrainingArguments&, const TrainerState& state, TrainerControl&,
                             const Logs& logs) {
  if (!state.is_local_process_zero) return;
  std::printf("%s\n", format_logs(logs).c_str());
  std::fflush(stdout);
}

void ProgressCallback::on_train_begin(const TrainingArguments&, const TrainerState& state,
                                      TrainerControl&) {
  total_ = state.max_steps;
  current_ = first_step_ = state.global_step;
  start_ = steady_seconds();
  last_loss_.reset();
  active_ = true;
  draw(false);
}

void ProgressCallback::on_step_end(const TrainingArguments&, const TrainerState& state,
                                   TrainerControl&) {
  current_ = state.global_step;
  draw(false);
}

void ProgressCallback::on_log(const TrainingArguments&, const TrainerState&, TrainerControl&,
                              const Logs& logs) {
  if (auto it = logs.find("loss"); it != logs.end()) last_loss_ = it->second;
  std::fprintf(stderr, "\r\033[K%s\n", format_logs(logs).c_str());
  if (active_) draw(false);
}

void ProgressCallback::on_prediction_step(const TrainingArguments&, const TrainerState&,
                                          TrainerControl&, int64_t done, int64_t total) {
  std::fprintf(stderr, "\r\033[KEvaluating %" PRId64 "/%" PRId64, done, total);
  std::fflush(stderr);
}

void ProgressCallback::on_evaluate(const TrainingArguments&, const TrainerState&, TrainerControl&,
                                   const Logs&) {
  std::fprintf(stderr, "\r\033[K");
  if (active_) draw(false);
}

void ProgressCallback::on_train_end(const TrainingArguments&, const TrainerState&,
                                    TrainerControl&) {
  if (active_) draw(true);
  active_ = false;
}

void ProgressCallback::draw(bool final_line) {
  const double elapsed = steady_seconds() - start_;
  const int64_t done = current_ - first_step_;
  const double rate = elapsed > 0 ? done / elapsed : 0;
  const double remaining = rate > 0 ? (total_ - current_) / rate : -1;
  const int width = 20;
  const double frac = total_ > 0 ? static_cast<double>(current_) / total_ : 0;
  const int filled = static_cast<int>(frac * width);
  std::string bar;
  for (int i = 0; i < width; ++i) bar += i < filled ? "\u2588" : " ";
  char head[64];
  std::snprintf(head, sizeof head, "%3d%%|", static_cast<int>(frac * 100));
  std::string line =
      std::string(head) + bar + "| " + std::to_string(current_) + "/" + std::to_string(total_) +
      " [" + format_interval(elapsed) + "<" + format_interval(remaining) + ", " +
      (rate >= 1 || rate == 0 ? format_g4(rate) + "it/s" : format_g4(1 / rate) + "s/it");
  if (last_loss_) line += ", loss=" + format_g4(*last_loss_);
  line += "]";
  std::fprintf(stderr, "\r\033[K%s%s", line.c_str(), final_line ? "\n" : "");
  std::fflush(stderr);
}

}  // namespace loom
