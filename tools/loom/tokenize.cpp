// `loom tokenize`: token ids for a file of texts, through
// loom::tokenize_json_lines — one JSON string per input line, one JSON array
// of ids per output line on stdout (blank lines skipped), so its output can
// be compared with the `tokenizers` library line by line.
// Assumes --input_file is UTF-8 JSON Lines ("-" reads stdin).
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "loom/error.h"
#include "loom/hub.h"
#include "loom/tokenizer.h"
#include "unknown_flags.h"

namespace loom::cli {
namespace {

struct TokenizeArgs {
  std::string tokenizer_name, input_file;
  bool add_special_tokens = true;
};

void run_tokenize(const TokenizeArgs& a) {
  for (const auto& [flag, value] :
       {std::pair{"--tokenizer_name", &a.tokenizer_name}, std::pair{"--input_file", &a.input_file}})
    if (value->empty()) fail("[loom tokenize] ", flag, " is required");
  // A directory, or a hub id from the local Hugging Face cache (as train's).
  Tokenizer tok = Tokenizer::from_pretrained(
      resolve_model_dir(a.tokenizer_name, "main", "[loom tokenize] --tokenizer_name"));
  EncodeOptions options = tok.default_options();
  options.add_special_tokens = a.add_special_tokens;
  if (a.input_file == "-") {
    tokenize_json_lines(tok, std::cin, std::cout, options, "<stdin>");
  } else {
    std::ifstream in(a.input_file, std::ios::binary);
    if (!in) fail("[tokenize] cannot open ", a.input_file);
    tokenize_json_lines(tok, in, std::cout, options, a.input_file);
  }
  std::cout.flush();
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto args = std::make_shared<TokenizeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize", "Token ids of a file of JSON strings, one JSON array of ids per line");
  cmd->add_option("--tokenizer_name", args->tokenizer_name,
                  "Tokenizer directory (tokenizer.json, vocab.json + merges.txt, or vocab.txt; "
                  "required)");
  cmd->add_option("--input_file", args->input_file,
                  "One JSON string per line (- = stdin; required)");
  cmd->add_option("--add_special_tokens", args->add_special_tokens,
                  "Add the post-processor's special tokens (true|false)")
      ->capture_default_str();
  cmd->allow_extras();
  cmd->callback([args, cmd] {
    check_unknown_flags(*cmd, "tokenize");
    run_tokenize(*args);
  });
}

}  // namespace loom::cli
