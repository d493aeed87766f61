// libFuzzer harness: a PEFT adapter_config.json (LoraConfig::from_json_file:
// the typed fields, peft_type, target_modules, the refused PEFT features,
// validate()). The input is written to a scratch file first, as the reader
// takes a path. An accepted config must survive a to_json() -> file ->
// from_json_file() round trip unchanged.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "fuzz_util.h"
#include "loom/lora.h"

namespace {

std::string scratch_path(const char* name) {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/loom_fuzz_adapter_XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    if (d == nullptr) std::abort();
    return std::string(d);
  }();
  return dir + "/" + name;
}

void write_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = scratch_path("adapter_config.json");
  write_file(path, loom::fuzz::as_text(data, size));
  loom::fuzz::run_guarded("adapter_config", [&] {
    loom::LoraConfig c = loom::LoraConfig::from_json_file(path);
    c.validate();
    const std::string again_path = scratch_path("again.json");
    write_file(again_path, c.to_json());
    loom::LoraConfig again = loom::LoraConfig::from_json_file(again_path);
    if (again.to_json() != c.to_json()) std::abort();
  });
  return 0;
}
