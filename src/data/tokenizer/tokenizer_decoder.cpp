// Decoder implementations; see data/tokenizer_decoder.h.
#include "data/tokenizer/tokenizer_decoder.h"

#include "data/tokenizer/bpe_byte_level.h"
#include "data/tokenizer/tokenizer_unicode.h"
#include "loom/error.h"

namespace loom::data {
namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
}

class ByteLevelDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      size_t start = bytes.size();
      bool mapped = true;
      for (size_t i = 0; i < t.size();) {
        int b = byte_level::char_to_byte(unicode::decode_utf8(t, i));
        if (b < 0) {
          mapped = false;
          break;
        }
        bytes.push_back(static_cast<char>(b));
      }
      if (!mapped) {
        bytes.resize(start);
        bytes += t;
      }
    }
    std::string text;
    unicode::repair_utf8(bytes, text);
    tokens.assign(1, std::move(text));
  }
};

class WordPieceDecoder final : public Decoder {
 public:
  WordPieceDecoder(std::string prefix, bool cleanup)
      : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        if (t.starts_with(prefix_)) {
          t.erase(0, prefix_.size());
        } else {
          t = " " + t;
        }
      }
      if (cleanup_) cleanup(t);
    }
  }

 private:
  static void cleanup(std::string& t) {
    replace_all(t, " .", ".");
    replace_all(t, " ?", "?");
    replace_all(t, " !", "!");
    replace_all(t, " ,", ",");
    replace_all(t, " ' ", "'");
    replace_all(t, " n't", "n't");
    replace_all(t, " 'm", "'m");
    replace_all(t, " do not", " don't");
    replace_all(t, " 's", "'s");
    replace_all(t, " 've", "'ve");
    replace_all(t, " 're", "'re");
  }
  std::string prefix_;
  bool cleanup_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps)
      : steps_(std::move(steps)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& step : steps_) step->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

}  // namespace

std::unique_ptr<Decoder> make_decoder(const io::DecoderSpec& spec, const std::string& source) {
  if (spec.type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (spec.type == "WordPiece") {
    return std::make_unique<WordPieceDecoder>(spec.prefix, spec.cleanup);
  }
  if (spec.type == "Sequence") {
    std::vector<std::unique_ptr<Decoder>> steps;
    for (const io::DecoderSpec& child : spec.children) {
      steps.push_back(make_decoder(child, source));
    }
    return std::make_unique<SequenceDecoder>(std::move(steps));
  }
  fail("[", source, "] decoder: unsupported type '", spec.type, "'");
}

}  // namespace loom::data
