// from_pretrained / save_pretrained for PretrainedModel (loom/models.h): the
// model-level rules on top of io/pretrained_files.h — key renaming (old
// LayerNorm.gamma/beta; adding or stripping the base-model prefix as
// transformers does), tied weights stored once, missing keys initialized,
// unexpected keys ignored — and auto_from_pretrained over the model registry
// (loom/model_registry.h).
#include <iostream>
#include <map>
#include <unordered_set>

#include "io/config_json.h"
#include "io/pretrained_files.h"
#include "loom/dist.h"
#include "loom/error.h"
#include "loom/hub.h"
#include "loom/lazy.h"
#include "loom/lora.h"
#include "loom/model_registry.h"
#include "loom/models.h"
#include "loom/safetensors.h"
#include "nn/models/init_weights.h"

namespace loom {

namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
    s.replace(pos, from.size(), to);
  return s;
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out;
}

// The checkpoint name a file key has in this model: old LayerNorm names
// (transformers' "legacy" WeightRenaming), then the base-model prefix added
// (base checkpoint into a head model) or stripped (head checkpoint into the
// base model). Returns "" for a head key that the base model does not have.
struct KeyMapper {
  std::string prefix;  // "transformer."
  bool model_has_prefix = false, file_has_prefix = false;
  const nn::StateDict* own = nullptr;

  std::string map(const std::string& file_key) const {
    std::string k = replace_all(file_key, "LayerNorm.gamma", "LayerNorm.weight");
    k = replace_all(k, "LayerNorm.beta", "LayerNorm.bias");
    if (model_has_prefix && !file_has_prefix && own->contains(prefix + k)) return prefix + k;
    if (!model_has_prefix && file_has_prefix && starts_with(k, prefix))
      return k.substr(prefix.size());
    return k;
  }
};

void report(const std::string& dir, const PretrainedModel& model, const LoadInfo& info,
            const PretrainedOptions& options) {
  if (options.strict && (!info.missing_keys.empty() || !info.unexpected_keys.empty())) {
    std::string msg = "[from_pretrained] " + dir + ": " + model.architecture() + " (strict):";
    if (!info.missing_keys.empty()) msg += " missing keys: " + join(info.missing_keys) + ";";
    if (!info.unexpected_keys.empty())
      msg += " unexpected keys: " + join(info.unexpected_keys) + ";";
    msg.pop_back();
    throw Error(msg);
  }
  // Data parallel: every rank loads the same files; rank 0 says what it found.
  if (!options.warn || dist::rank() != 0) return;
  if (!info.unexpected_keys.empty())
    std::cerr << "[from_pretrained] " << dir << ": weights not used by " << model.architecture()
              << ": " << join(info.unexpected_keys) << "\n";
  if (!info.missing_keys.empty())
    std::cerr << "[from_pretrained] " << dir << ": weights of " << model.architecture()
              << " not in the checkpoint, newly initialized: " << join(info.missing_keys) << "\n";
}

// The checkpoint tensor `base_name` stands for: the key itself, or any key
// ending in "." + base_name ("transformer.wte.weight"), old LayerNorm names
// aside (they set no size).
const safetensors::TensorInfo* find_config_tensor(const io::PretrainedWeights& weights,
                                                  const std::string& base_name) {
  for (const auto& e : weights.entries()) {
    const std::string& n = e.name;
    if (n == base_name ||
        (n.size() > base_name.size() &&
         n.compare(n.size() - base_name.size(), base_name.size(), base_name) == 0 &&
         n[n.size() - base_name.size() - 1] == '.'))
      return e.info;
  }
  return nullptr;
}

// Floating checkpoint tensors convert to the model's floating dtype (f16/bf16
// -> f32, as transformers' torch_dtype); any other difference (I32 data for
// an F32 weight: same bytes, other meaning) is an error.
void check_dtype(const std::string& dir, const std::string& name, DType file, DType model) {
  if (file == model || (is_floating(file) && is_floating(model))) return;
  fail("[from_pretrained] ", dir, ": tensor '", name, "' has dtype ", safetensors::dtype_code(file),
       " but the model's weight is ", safetensors::dtype_code(model),
       " (only floating dtypes F32/F16/BF16 convert into each other)");
}

// transformers 5's rule (PreTrainedModel.tie_weights during from_pretrained,
// modeling_utils.py): when the model ties a weight to another
// (tie_word_embeddings: lm_head.weight to the embedding) but the checkpoint
// holds both with different values, the config does not reflect the
// checkpoint: the two are NOT tied, each gets its own values, with a warning.
// Equal values stay tied. Returns true when it untied something.
bool untie_differing_aliases(PretrainedModel& model, const std::string& dir,
                             const nn::StateDict& dict, const nn::StateDict& own,
                             const PretrainedOptions& options) {
  std::map<const TensorImpl*, std::string> first;  // tensor -> its first name
  bool untied = false;
  for (const auto& [name, t] : own) {
    auto [it, fresh] = first.emplace(t.impl(), name);
    const Tensor* a = fresh ? nullptr : dict.find(it->second);
    const Tensor* b = fresh ? nullptr : dict.find(name);
    if (a == nullptr || b == nullptr) continue;
    if (a->to(DType::f32).to_vector<float>() == b->to(DType::f32).to_vector<float>()) continue;
    const size_t dot = name.rfind('.');
    const std::string owner = dot == std::string::npos ? "" : name.substr(0, dot);
    for (auto& [prefix, m] : model.named_modules()) {
      if (prefix != owner) continue;
      Tensor own_copy = zeros_like(t);
      if (t.requires_grad()) own_copy.requires_grad_();
      m->set_parameter(name.substr(dot + 1), own_copy);
      untied = true;
    }
    if (options.warn && dist::rank() == 0)
      std::cerr << "[from_pretrained] " << dir << ": warning: config.json ties " << name << " to "
                << it->second << " (tie_word_embeddings), but the checkpoint holds both with "
                << "different values: they are not tied (as transformers); set "
                   "tie_word_embeddings to false in config.json to silence this\n";
  }
  return untied;
}

}  // namespace

namespace detail {

void check_config_tensors(const std::string& dir, const std::vector<ConfigTensor>& want) {
  io::PretrainedWeights weights = io::PretrainedWeights::open(dir);
  for (const ConfigTensor& t : want) {
    const safetensors::TensorInfo* info = find_config_tensor(weights, t.name);
    if (info == nullptr || info->shape == t.shape) continue;
    fail("[from_pretrained] ", dir, ": shape mismatch: ", info->name, " (checkpoint ",
         to_string(info->shape), ", model ", to_string(t.shape), "); config.json's ", t.fields,
         " disagree with the weights (checked before the model is allocated)");
  }
}

void load_pretrained_weights(PretrainedModel& model, const std::string& dir, const Device& device,
                             const PretrainedOptions& options) {
  io::PretrainedWeights weights = io::PretrainedWeights::open(dir);
  nn::StateDict own = model.state_dict();
  KeyMapper mapper;
  mapper.prefix = model.base_model_prefix() + ".";
  mapper.own = &own;
  for (const auto& [name, t] : own) mapper.model_has_prefix |= starts_with(name, mapper.prefix);
  for (const auto& e : weights.entries())
    mapper.file_has_prefix |= starts_with(e.name, mapper.prefix);

  std::vector<std::string> ignored = model.ignored_checkpoint_keys();
  nn::StateDict dict;
  LoadInfo info;
  std::map<std::string, std::string> source;  // model key -> file key
  for (const auto& e : weights.entries()) {
    std::string key = mapper.map(e.name);
    if (!own.contains(key)) {
      if (!models::matches_any(key, ignored)) info.unexpected_keys.push_back(e.name);
      continue;
    }
    auto [it, fresh] = source.emplace(key, e.name);
    LOOM_CHECK(fresh, "[from_pretrained] ", dir, ": both '", it->second, "' and '", e.name,
               "' map to ", key);
    check_dtype(dir, e.name, e.info->dtype, own.find(key)->dtype());
    std::span<const std::byte> bytes = weights.data(e);
    dict.insert(key, from_blob(bytes.data(), e.info->shape, e.info->dtype));
  }
  LOOM_CHECK(!source.empty() || own.size() == 0, "[from_pretrained] ", dir, ": the checkpoint ",
             "provides none of the weights of ", model.architecture(), " (",
             weights.entries().size(), " tensors",
             weights.entries().empty() ? "" : ", e.g. '" + weights.entries()[0].name + "'",
             "; expected names like '", own.begin()->first, "')");
  untie_differing_aliases(model, dir, dict, own, options);
  nn::LoadResult result;
  try {
    result = model.load_state_dict(dict, /*strict=*/false);
  } catch (const Error& err) {
    fail("[from_pretrained] ", dir, ": ", err.what());
  }
  info.missing_keys = result.missing_keys;
  report(dir, model, info, options);
  if (!info.missing_keys.empty()) {
    std::unordered_set<std::string> missing(info.missing_keys.begin(), info.missing_keys.end());
    model.init_weights([&](const std::string& n) { return missing.count(n) > 0; });
  }
  if (options.info) *options.info = info;
  model.to(device);
  model.eval();
}

}  // namespace detail

void PretrainedModel::save_pretrained(const std::string& dir, int64_t max_shard_size) const {
  nn::StateDict sd = state_dict();
  std::vector<Tensor> keep;
  std::vector<safetensors::TensorRef> refs;
  std::unordered_set<const TensorImpl*> seen;
  std::vector<Tensor> lazy_tensors;
  for (const auto& [name, t] : sd)
    if (t.device().is_lazy()) lazy_tensors.push_back(t);
  if (!lazy_tensors.empty()) lazy::sync(lazy_tensors);  // one graph, not one sync per tensor
  for (const auto& [name, t] : sd) {
    if (!seen.insert(t.impl()).second) continue;  // a tied alias: stored once, first name
    keep.push_back(t);
    refs.push_back({name, t.dtype(), t.shape(), t.data()});
  }
  io::write_pretrained_dir(dir, {{io::kConfigFile, config_json()}}, refs, max_shard_size);
}

// A PEFT adapter directory (transformers' from_pretrained with an
// adapter_config.json): the base model named by base_model_name_or_path,
// then the adapter on top.
static std::shared_ptr<PretrainedModel> auto_peft_from_pretrained(
    const std::string& dir, const Device& device, const PretrainedOptions& options) {
  const std::string config_path = dir + "/adapter_config.json";
  const LoraConfig config = LoraConfig::from_json_file(config_path);
  const std::string base_dir =
      resolve_adapter_base(dir, config.base_model_name_or_path, config.revision);
  LOOM_CHECK(!is_peft_adapter_dir(base_dir), "[from_pretrained] ", config_path,
             ": base_model_name_or_path '", config.base_model_name_or_path,
             "' must name the base model's directory, not another adapter");
  std::shared_ptr<PretrainedModel> base = auto_from_pretrained(base_dir, device, options);
  auto lm = std::dynamic_pointer_cast<CausalLM>(base);
  LOOM_CHECK(lm != nullptr, "[from_pretrained] ", dir, ": the adapter's base model ",
             base->architecture(), " is not a causal LM");
  return PeftModelForCausalLM::from_pretrained(lm, dir, device);
}

void PretrainedModel::load_saved_weights(const std::string& dir, const Device& device,
                                         const PretrainedOptions& options) {
  detail::load_pretrained_weights(*this, dir, device, options);
}

std::shared_ptr<PretrainedModel> auto_from_pretrained(const std::string& dir, const Device& device,
                                                      const PretrainedOptions& options) {
  if (is_peft_adapter_dir(dir)) return auto_peft_from_pretrained(dir, device, options);
  std::string path = dir + "/" + io::kConfigFile;
  std::string type = read_model_type(path);
  const ModelTypeEntry* entry = nullptr;
  for (const ModelTypeEntry& e : model_types())
    if (e.model_type == type) entry = &e;
  if (!entry)
    fail("[from_pretrained] ", path, ": model_type '", type, "' is not supported (",
         model_type_names(), ")");
  std::string text = io::read_config_text(path);
  ConfigSummary summary = entry->read_config(text, path);
  const std::vector<std::string>& archs = summary.common.architectures;
  std::string arch = archs.empty() ? entry->base().name : archs.front();
  const ArchitectureEntry* a = entry->find(arch);
  if (!a) fail("[from_pretrained] ", path, ": architecture '", arch, "' is not supported");
  // The sizes against the memory and the checkpoint's shapes, before allocating (as
  // from_pretrained<M>): `loom generate` came through here without them.
  entry->check_pretrained(dir, text, path);
  std::shared_ptr<PretrainedModel> model;
  {
    nn::NoInitGuard no_init;
    model = a->make(text, path);
  }
  detail::load_pretrained_weights(*model, dir, device, options);
  return model;
}

void PretrainedModel::gradient_checkpointing_enable(bool on) {
  for (auto& [name, module] : named_modules())
    if (auto* model = dynamic_cast<PretrainedModel*>(module)) model->gradient_checkpointing_ = on;
}

bool PretrainedModel::checkpoint_layers() const {
  return gradient_checkpointing_ && is_training() && is_grad_enabled();
}

}  // namespace loom
