// Link-time stand-ins for fuzz_cli_flags (and fuzz_adapter_config, whose
// LoRA reader asks the registry for default targets), which compiles the flag parser
// (tools/loom/job_args.cpp, TrainingArguments) without the model registry and
// the lazy device: those pull in every model and backend, which the parser
// only asks a few questions. Assumes the harness fuzzes parsing, not whether a
// backend or model type exists (tests/cli and tests/train check those).
#include <deque>
#include <string>

#include "loom/lazy.h"
#include "loom/model_registry.h"

namespace loom {

const std::deque<ModelTypeEntry>& model_types() {
  static const std::deque<ModelTypeEntry> kNames = [] {
    std::deque<ModelTypeEntry> out;
    for (const char* name : {"gpt2", "bert", "llama", "qwen2"}) {
      ModelTypeEntry e;
      e.model_type = name;
      out.push_back(e);
    }
    return out;
  }();
  return kNames;
}

std::string model_type_names() { return "gpt2, bert, llama, qwen2"; }
std::string layer_class_of_architecture(const std::string&) { return ""; }  // --fsdp_config
std::string model_types_for_task(const std::string&) { return "gpt2"; }  // help texts

namespace lazy {
void check_device(const Device&) {}  // the name's syntax is checked by Device itself
}  // namespace lazy

namespace backends::xla {
void set_pjrt_plugin_path(std::string) {}  // --xla_plugin: the parser never loads a plugin
}  // namespace backends::xla

}  // namespace loom
