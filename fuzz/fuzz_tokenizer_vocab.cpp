// libFuzzer harness: the tokenizer files that predate tokenizer.json
// (io/tokenizer_files.h). The first input byte picks the format:
//   even  BERT vocab.txt (the rest of the input)
//   odd   GPT-2 vocab.json and merges.txt, the rest split at the first NUL
// Each reader must succeed or throw loom::Error; a tokenizer that builds
// must encode a fixed text with ids below vocab_size and decode them.
#include <cstdlib>

#include "data/tokenizer/tokenizer_impl.h"
#include "fuzz_util.h"
#include "io/tokenizer_files.h"

namespace {

void encode_and_decode(const loom::io::TokenizerSpec& spec) {
  auto tok = loom::detail::build_tokenizer(spec);
  loom::EncodeOptions options;
  options.return_offsets = true;
  loom::Encoding enc =
      tok->encode("Hello, wörld! don't [MASK] <|endoftext|> 中文 ##s", nullptr, options, true);
  for (int32_t id : enc.ids) {
    if (id < 0 || id >= tok->vocab_size) std::abort();
  }
  tok->decode(enc.ids.data(), enc.ids.size(), false);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool gpt2 = data[0] & 1;
  std::string rest(loom::fuzz::as_text(data + 1, size - 1));
  loom::fuzz::run_guarded(gpt2 ? "vocab.json+merges.txt" : "vocab.txt", [&] {
    if (!gpt2) {
      auto vocab = loom::io::parse_vocab_txt(rest, "<fuzz vocab.txt>");
      encode_and_decode(loom::io::bert_spec(vocab, loom::io::BertVocabOptions{}, "<fuzz>"));
      return;
    }
    size_t nul = rest.find('\0');
    std::string vocab_json = rest.substr(0, nul);
    std::string merges_txt = nul == std::string::npos ? "" : rest.substr(nul + 1);
    auto vocab = loom::io::parse_vocab_json(vocab_json, "<fuzz vocab.json>");
    auto merges = loom::io::parse_merges_txt(merges_txt, "<fuzz merges.txt>");
    encode_and_decode(loom::io::gpt2_spec(vocab, merges, true, "<fuzz>"));
  });
  return 0;
}
