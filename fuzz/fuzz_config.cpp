// libFuzzer harness: the config.json reader (GPT2Config / BertConfig /
// LlamaConfig (llama and qwen2) from_json_string, then validate()). Every
// config reads every input: a wrong model_type is one of the errors under
// test, and so are the Llama rope entries in both forms (rope_scaling,
// rope_parameters). Accepted configs must survive a to_json_string() ->
// from_json_string() round trip.
#include <cstdlib>

#include "fuzz_util.h"
#include "loom/bert_config.h"
#include "loom/gpt2_config.h"
#include "loom/llama_config.h"

namespace {

template <class Config>
void read_config(const std::string& text) {
  loom::fuzz::run_guarded("config", [&] {
    Config cfg = Config::from_json_string(text, "<fuzz>");
    cfg.validate();
    Config again = Config::from_json_string(cfg.to_json_string(), "<fuzz round trip>");
    if (again.to_json_string() != cfg.to_json_string()) std::abort();
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(loom::fuzz::as_text(data, size));
  read_config<loom::GPT2Config>(text);
  read_config<loom::BertConfig>(text);
  read_config<loom::LlamaConfig>(text);
  return 0;
}
