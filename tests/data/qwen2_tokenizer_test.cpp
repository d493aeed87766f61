// The real Qwen2 / Qwen2.5 / Qwen3 tokenizer (151,643-token byte-level BPE, NFC, Qwen2's split
// regex) against the ids Hugging Face `tokenizers` gives: the 46 strings of llama.cpp's
// ggml-vocab-qwen2.gguf.inp (spaces, newlines, apostrophes, emoji, CJK, digit runs, code) and
// their ids in .out, encoded without special tokens. The files live outside the repository,
// in ../shared/data/tokenizers/qwen2/ (see that folder's README.md for their source); without
// them the test skips with a message, and fails under CI=true.
//
// File format (llama.cpp's test-tokenizer-0): the .inp strings are separated by the line
// "__ggml_vocab_test__" (each string ends before the newline that precedes it); line i of
// .out holds string i's ids separated by spaces (an empty line for the empty string).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/shared_data.h"
#include "loom/tokenizer.h"

namespace loom {
namespace {

const std::string kQwen2Dir = testing::shared_data_dir() + "/tokenizers/qwen2";

std::string qwen2_read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Splits the .inp text at "\n__ggml_vocab_test__\n" (every string is followed by one).
std::vector<std::string> qwen2_read_inputs(const std::string& text) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  size_t begin = 0;
  for (size_t at = text.find(sep); at != std::string::npos; at = text.find(sep, begin)) {
    out.push_back(text.substr(begin, at - begin));
    begin = at + sep.size();
  }
  return out;
}

std::vector<std::vector<int32_t>> qwen2_read_outputs(const std::string& text) {
  std::vector<std::vector<int32_t>> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream ids(line);
    std::vector<int32_t> row;
    for (int32_t id; ids >> id;) row.push_back(id);
    out.push_back(row);
  }
  return out;
}

std::string qwen2_ids_text(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += " " + std::to_string(id);
  return s;
}

TEST(Qwen2Tokenizer, EncodesEveryLlamaCppCaseAsHuggingFaceTokenizers) {
  if (!std::filesystem::exists(kQwen2Dir + "/tokenizer.json")) {
    if (testing::under_ci()) FAIL() << "CI=true, and " << kQwen2Dir << "/tokenizer.json is missing";
    GTEST_SKIP() << kQwen2Dir << "/tokenizer.json is not here (the shared data folder)";
  }
  std::vector<std::string> inputs = qwen2_read_inputs(qwen2_read_text(kQwen2Dir + "/qwen2.inp"));
  std::vector<std::vector<int32_t>> want =
      qwen2_read_outputs(qwen2_read_text(kQwen2Dir + "/qwen2.out"));
  ASSERT_EQ(inputs.size(), 46u) << "qwen2.inp";
  ASSERT_EQ(want.size(), inputs.size()) << "qwen2.out has one line per qwen2.inp string";
  Tokenizer tok = Tokenizer::from_file(kQwen2Dir + "/tokenizer.json");
  EXPECT_EQ(tok.vocab_size(), 151646) << "151,643 tokens and 3 special ones";
  EncodeOptions opts = tok.default_options();
  opts.add_special_tokens = false;
  int failed = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<int32_t> got = tok.encode(inputs[i], opts).ids;
    if (got == want[i]) continue;
    ++failed;
    ADD_FAILURE() << "case " << i << " \"" << inputs[i]
                  << "\"\n  loom:      " << qwen2_ids_text(got)
                  << "\n  tokenizers:" << qwen2_ids_text(want[i]);
  }
  EXPECT_EQ(failed, 0) << "of " << inputs.size() << " cases";
  // Decoding gives the text back (byte-level BPE is lossless on valid UTF-8).
  for (size_t i = 0; i < inputs.size(); ++i)
    EXPECT_EQ(tok.decode(want[i]), inputs[i]) << "case " << i;
}

}  // namespace
}  // namespace loom
