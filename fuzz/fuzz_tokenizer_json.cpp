// libFuzzer harness: the tokenizer.json reader and the tokenizer built from
// it. parse_tokenizer_json() + build_tokenizer() must succeed or throw
// loom::Error; a tokenizer that loads must then encode a fixed text (and a
// pair), with ids below vocab_size, and decode those ids.
#include <cstdlib>

#include "data/tokenizer/tokenizer_impl.h"
#include "fuzz_util.h"
#include "io/tokenizer_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = loom::fuzz::as_text(data, size);
  loom::fuzz::run_guarded("tokenizer.json", [&] {
    loom::io::TokenizerSpec spec = loom::io::parse_tokenizer_json(text, "<fuzz>");
    auto tok = loom::detail::build_tokenizer(spec);
    loom::EncodeOptions options = loom::detail::options_from_spec(spec);
    options.return_offsets = true;
    std::string_view second = "[SEP] héllo\tworld";
    loom::Encoding enc =
        tok->encode("Hello, wörld! don't  <|endoftext|> [CLS] 中文", &second, options, true);
    for (int32_t id : enc.ids) {
      if (id < 0 || id >= tok->vocab_size) std::abort();
    }
    tok->decode(enc.ids.data(), enc.ids.size(), true);
  });
  return 0;
}
