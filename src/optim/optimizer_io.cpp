// Optimizer::save / Optimizer::load: an optimizer's state_dict as one
// safetensors file (layout in docs/optim.md):
//   tensors      "state.<param index>.<buffer>" (exp_avg, exp_avg_sq,
//                momentum_buffer), in the state's dtype, parameter shape
//   __metadata__ "optimizer":    "AdamW" | "SGD"
//                "param_groups": JSON array, one object per group: its
//                                options (lr, weight_decay, ...) and
//                                "params": [param indices]
//                "step":         JSON object {"<param index>": step count}
//                                for every parameter that has state
// Assumes parameter indices are torch's state_dict numbering (across groups
// in order). Doubles round-trip exactly through nlohmann::json.
#include <charconv>
#include <cstring>

#include <nlohmann/json.hpp>

#include "io/json_parse.h"
#include "loom/error.h"
#include "loom/lazy.h"
#include "loom/optim.h"
#include "loom/safetensors.h"

namespace loom::optim {
namespace {

using nlohmann::json;

std::string metadata_json(const StateDict& sd) {
  json groups = json::array();
  for (size_t g = 0; g < sd.group_options.size(); ++g) {
    json group = json::object();
    for (const auto& [key, value] : sd.group_options[g]) group[key] = value;
    group["params"] = sd.group_params[g];
    groups.push_back(std::move(group));
  }
  return groups.dump();
}

std::string steps_json(const StateDict& sd) {
  json steps = json::object();
  for (const auto& [index, ps] : sd.state) steps[std::to_string(index)] = ps.step;
  return steps.dump();
}

// Parses a non-negative decimal index ("12"); false for anything else.
bool parse_index(std::string_view text, int64_t* out) {
  if (text.empty() || (text.size() > 1 && text[0] == '0')) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && *out >= 0;
}

json parse_meta(const safetensors::File& file, const std::string& key) {
  auto it = file.metadata().find(key);
  LOOM_CHECK(it != file.metadata().end(), "[optim] ", file.path(), ": __metadata__ lacks '", key,
             "' (not an optimizer state file?)");
  io::check_json_depth(it->second, "[optim] " + file.path() + ": __metadata__ '" + key + "'");
  try {
    return json::parse(it->second);
  } catch (const json::exception& e) {
    fail("[optim] ", file.path(), ": __metadata__ '", key, "' is not valid JSON: ", e.what());
  }
}

void read_groups(const safetensors::File& file, StateDict* sd) {
  json groups = parse_meta(file, "param_groups");
  LOOM_CHECK(groups.is_array(), "[optim] ", file.path(), ": param_groups is not a JSON array");
  for (const json& group : groups) {
    LOOM_CHECK(group.is_object(), "[optim] ", file.path(), ": a parameter group is not an object");
    Options options;
    std::vector<int64_t> ids;
    for (const auto& [key, value] : group.items()) {
      if (key == "params") {
        LOOM_CHECK(value.is_array(), "[optim] ", file.path(), ": 'params' is not an array");
        for (const json& id : value) {
          LOOM_CHECK(id.is_number_integer(), "[optim] ", file.path(),
                     ": 'params' holds a non-integer ", id.dump());
          ids.push_back(id.get<int64_t>());
        }
      } else {
        LOOM_CHECK(value.is_number(), "[optim] ", file.path(), ": option '", key,
                   "' is not a number: ", value.dump());
        options[key] = value.get<double>();
      }
    }
    sd->group_options.push_back(std::move(options));
    sd->group_params.push_back(std::move(ids));
  }
}

void read_steps(const safetensors::File& file, StateDict* sd) {
  json steps = parse_meta(file, "step");
  LOOM_CHECK(steps.is_object(), "[optim] ", file.path(), ": step is not a JSON object");
  for (const auto& [key, value] : steps.items()) {
    int64_t index = 0;
    LOOM_CHECK(parse_index(key, &index), "[optim] ", file.path(), ": step key '", key,
               "' is not a parameter index");
    LOOM_CHECK(value.is_number_integer() && value.get<int64_t>() >= 0, "[optim] ", file.path(),
               ": step of parameter ", key, " is not a non-negative integer: ", value.dump());
    sd->state[index].step = value.get<int64_t>();
  }
}

void read_tensors(const safetensors::File& file, StateDict* sd) {
  for (const safetensors::TensorInfo& info : file.tensors()) {
    const std::string& name = info.name;
    size_t dot = name.find('.', 6);
    int64_t index = 0;
    bool ok = name.rfind("state.", 0) == 0 && dot != std::string::npos && dot + 1 < name.size() &&
              parse_index(std::string_view(name).substr(6, dot - 6), &index);
    LOOM_CHECK(ok, "[optim] ", file.path(), ": tensor '", name,
               "' is not named state.<param index>.<buffer>");
    auto it = sd->state.find(index);
    LOOM_CHECK(it != sd->state.end(), "[optim] ", file.path(), ": tensor '", name,
               "' has no step count in __metadata__ 'step'");
    LOOM_CHECK(is_floating(info.dtype), "[optim] ", file.path(), ": tensor '", name, "' has dtype ",
               dtype_name(info.dtype), ", expected a floating dtype");
    auto bytes = file.data(info);
    it->second.buffers[name.substr(dot + 1)] = from_blob(bytes.data(), info.shape, info.dtype);
  }
}

}  // namespace

// As save_pretrained: one sync for every lazy state tensor (one graph, not one
// per tensor), then the writer reads each tensor's own buffer in turn. No
// host copy of the state is made (pytorch/xla#5115: a copy of all of it at
// once doubled the optimizer's memory during a save).
void Optimizer::save(const std::string& path,
                     const std::map<std::string, std::string>& extra_metadata) const {
  std::map<std::string, std::string> metadata = extra_metadata;
  for (const char* key : {"optimizer", "param_groups", "step"})
    LOOM_CHECK(!metadata.count(key), "[optim] save ", path, ": extra metadata key '", key,
               "' is the layout's own");
  StateDict sd = state_dict();  // shares the state tensors (no copy); keeps them alive
  std::vector<Tensor> lazy_tensors;
  for (const auto& [index, ps] : sd.state)
    for (const auto& [name, t] : ps.buffers)
      if (t.device().is_lazy()) lazy_tensors.push_back(t);
  if (!lazy_tensors.empty()) lazy::sync(lazy_tensors);
  std::vector<safetensors::TensorRef> refs;
  for (const auto& [index, ps] : sd.state)
    for (const auto& [name, t] : ps.buffers)
      refs.push_back(
          {"state." + std::to_string(index) + "." + name, t.dtype(), t.shape(), t.data()});
  metadata["optimizer"] = sd.optimizer;
  metadata["param_groups"] = metadata_json(sd);
  metadata["step"] = steps_json(sd);
  safetensors::save(path, refs, metadata);
}

void Optimizer::load(const std::string& path) {
  StateDict sd = read_state_dict(path);
  try {
    load_state_dict(sd);
  } catch (const Error& e) {
    fail(e.what(), " (loading ", path, ")");
  }
}

StateDict Optimizer::read_state_dict(const std::string& path) {
  safetensors::File file = safetensors::File::open(path);
  StateDict sd;
  auto it = file.metadata().find("optimizer");
  LOOM_CHECK(it != file.metadata().end(), "[optim] ", path,
             ": __metadata__ lacks 'optimizer' (not an optimizer state file?)");
  sd.optimizer = it->second;
  read_groups(file, &sd);
  read_steps(file, &sd);
  read_tensors(file, &sd);
  return sd;
}

}  // namespace loom::optim
