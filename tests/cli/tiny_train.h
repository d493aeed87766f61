// The tiny `loom train` run the CLI tests share: the first lines of a
// vendored novel as the training text, and the flags of a from-scratch
// 2-layer, 16-wide GPT-2 with GPT-2's tokenizer on the lazy device.
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include "common/temp_dir.h"

namespace loom::testing {

inline const std::string kGpt2Tokenizer = std::string(LOOM_SOURCE_DIR) + "/assets/tokenizers/gpt2";

/// The first `n` lines of Pride and Prejudice, as a small training text.
inline std::string write_tiny_corpus(const TempDir& dir, int n) {
  std::ifstream in(std::string(LOOM_SOURCE_DIR) + "/assets/corpora/austen/prideprejudice.txt");
  std::string line, text;
  for (int i = 0; i < n && std::getline(in, line); ++i) text += line + "\n";
  return dir.write("tiny.txt", text);
}

/// Flags of a tiny from-scratch GPT-2 run on `train_file`.
inline std::vector<std::string> tiny_train_flags(const std::string& train_file,
                                                 const std::string& out) {
  return {"train",
          "--model_type",
          "gpt2",
          "--config_overrides",
          "n_layer=2,n_embd=16,n_head=2,n_positions=32",
          "--tokenizer_name",
          kGpt2Tokenizer,
          "--train_file",
          train_file,
          "--validation_split_percentage",
          "20",
          "--output_dir",
          out,
          "--per_device_train_batch_size",
          "2",
          "--eval_strategy",
          "steps",
          "--eval_steps",
          "2",
          "--save_steps",
          "2",
          "--device",
          "lazy",
          "--disable_tqdm",
          "--logging_first_step",
          "true"};
}

}  // namespace loom::testing
