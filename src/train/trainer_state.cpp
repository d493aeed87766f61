// TrainerState <-> trainer_state.json, in the layout transformers'
// TrainerState.save_to_json writes (json.dumps(dataclasses.asdict(state),
// indent=2, sort_keys=True) + "\n") and load_from_json reads. "step" in
// log_history and the integer fields are written as integers, the rest as
// floats; trial_name and trial_params are null (no hyper-parameter search).
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "io/json_parse.h"
#include "loom/callbacks.h"
#include "loom/error.h"

namespace loom {
namespace {

using nlohmann::json;

template <typename T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json log_entry_json(const Logs& logs) {
  json e = json::object();
  for (const auto& [k, v] : logs) {
    if (k == "step") {
      e[k] = static_cast<int64_t>(v);
    } else {
      e[k] = v;
    }
  }
  return e;
}

template <typename T>
void read(const json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it != j.end() && !it->is_null()) out = it->get<T>();
}

template <typename T>
void read_opt(const json& j, const char* key, std::optional<T>& out) {
  auto it = j.find(key);
  out = (it == j.end() || it->is_null()) ? std::nullopt : std::optional<T>(it->get<T>());
}

}  // namespace

std::string TrainerState::to_json() const {
  json j = json::object();
  j["best_global_step"] = opt(best_global_step);
  j["best_metric"] = opt(best_metric);
  j["best_model_checkpoint"] = opt(best_model_checkpoint);
  j["epoch"] = epoch;
  j["eval_steps"] = eval_steps;
  j["global_step"] = global_step;
  j["is_hyper_param_search"] = is_hyper_param_search;
  j["is_local_process_zero"] = is_local_process_zero;
  j["is_world_process_zero"] = is_world_process_zero;
  json history = json::array();
  for (const Logs& e : log_history) history.push_back(log_entry_json(e));
  j["log_history"] = history;
  j["logging_steps"] = logging_steps;
  j["max_steps"] = max_steps;
  j["num_input_tokens_seen"] = num_input_tokens_seen;
  j["num_train_epochs"] = num_train_epochs;
  j["save_steps"] = save_steps;
  json callbacks = json::object();
  for (const auto& [name, text] : stateful_callbacks) callbacks[name] = json::parse(text);
  j["stateful_callbacks"] = callbacks;
  j["total_flos"] = total_flos;
  j["train_batch_size"] = opt(train_batch_size);
  j["trial_name"] = nullptr;
  j["trial_params"] = nullptr;
  return j.dump(2) + "\n";
}

TrainerState TrainerState::from_json(const std::string& text, const std::string& where) {
  TrainerState s;
  io::check_json_depth(text, "[trainer_state] " + where);
  try {
    json j = json::parse(text);
    LOOM_CHECK(j.is_object(), "[trainer_state] ", where, ": expected a JSON object");
    read(j, "epoch", s.epoch);
    read(j, "global_step", s.global_step);
    read(j, "max_steps", s.max_steps);
    read(j, "logging_steps", s.logging_steps);
    read(j, "eval_steps", s.eval_steps);
    read(j, "save_steps", s.save_steps);
    read_opt(j, "train_batch_size", s.train_batch_size);
    read(j, "num_train_epochs", s.num_train_epochs);
    read(j, "num_input_tokens_seen", s.num_input_tokens_seen);
    read(j, "total_flos", s.total_flos);
    read_opt(j, "best_metric", s.best_metric);
    read_opt(j, "best_global_step", s.best_global_step);
    read_opt(j, "best_model_checkpoint", s.best_model_checkpoint);
    read(j, "is_local_process_zero", s.is_local_process_zero);
    read(j, "is_world_process_zero", s.is_world_process_zero);
    read(j, "is_hyper_param_search", s.is_hyper_param_search);
    if (auto it = j.find("log_history"); it != j.end() && !it->is_null()) {
      for (const json& e : *it) {
        Logs logs;
        for (const auto& [k, v] : e.items())
          if (v.is_number()) logs[k] = v.get<double>();  // strings (rare) are dropped
        s.log_history.push_back(std::move(logs));
      }
    }
    if (auto it = j.find("stateful_callbacks"); it != j.end() && it->is_object())
      for (const auto& [k, v] : it->items()) s.stateful_callbacks[k] = v.dump();
  } catch (const json::exception& e) {
    fail("[trainer_state] ", where, ": malformed (", e.what(), ")");
  }
  return s;
}

TrainerState TrainerState::from_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(in.good(), "[trainer_state] ", path, ": cannot open file");
  std::stringstream buf;
  buf << in.rdbuf();
  return from_json(buf.str(), path);
}

}  // namespace loom
