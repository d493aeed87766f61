// `loom tokenize`: token ids for a file of texts, through
// loom::tokenize_json_lines — one JSON string per input line, one JSON array
// of ids per output line on stdout (blank lines skipped), so its output can
// be compared with the `tokenizers` library line by line.
// With --chat, each input line is a conversation ({"messages": [...], "tools": [...]}) and
// each output line {"text", "input_ids", "assistant_masks"}: the model's chat template
// rendered (loom::ChatTemplate), its ids (no special tokens added, as transformers'
// apply_chat_template) and the `{% generation %}` mask.
// Assumes --input_file is UTF-8 JSON Lines ("-" reads stdin).
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "flags.h"
#include "io/json_parse.h"
#include "loom/chat_template.h"
#include "loom/error.h"
#include "loom/hub.h"
#include "loom/tokenizer.h"
#include "unknown_flags.h"

namespace loom::cli {
namespace {

struct TokenizeArgs {
  std::string tokenizer_name, input_file;
  bool add_special_tokens = true;
  bool chat = false, add_generation_prompt = false;
  std::string chat_template_path;
};

// One conversation per line -> {"text", "input_ids", "assistant_masks"} per line.
void tokenize_chat_lines(const Tokenizer& tok, const ChatTemplate& tmpl, bool add_generation_prompt,
                         std::istream& in, const std::string& source) {
  EncodeOptions options;
  options.add_special_tokens = false;
  options.return_offsets = true;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string where = "[loom tokenize] " + source + " line " + std::to_string(n);
    auto row = io::parse_json<nlohmann::ordered_json>(line, where);
    if (!row.is_object() || !row.contains("messages"))
      fail(where, ": expected an object with \"messages\"");
    ChatInput input;
    input.messages_json = row["messages"].dump();
    if (row.contains("tools") && !row["tools"].is_null()) input.tools_json = row["tools"].dump();
    input.add_generation_prompt = add_generation_prompt;
    ChatRendered r;
    try {
      r = tmpl.apply(input);
    } catch (const Error& e) {
      fail(where, ": ", e.what());
    }
    Encoding enc = tok.encode(r.text, options);
    nlohmann::ordered_json out;
    out["text"] = r.text;
    out["input_ids"] = enc.ids;
    out["assistant_masks"] = assistant_token_mask(enc.offsets, r.generation);
    std::cout << out.dump() << "\n";
  }
}

void run_tokenize(const TokenizeArgs& a) {
  for (const auto& [flag, value] :
       {std::pair{"--tokenizer_name", &a.tokenizer_name}, std::pair{"--input_file", &a.input_file}})
    if (value->empty()) fail("[loom tokenize] ", flag, " is required");
  // A directory, or a hub id from the local Hugging Face cache (as train's).
  std::string dir = resolve_model_dir(a.tokenizer_name, "main", "[loom tokenize] --tokenizer_name");
  Tokenizer tok = Tokenizer::from_pretrained(dir);
  EncodeOptions options = tok.default_options();
  options.add_special_tokens = a.add_special_tokens;
  if (a.chat) {
    ChatTemplate tmpl = ChatTemplate::from_pretrained(dir, a.chat_template_path);
    if (a.input_file == "-") {
      tokenize_chat_lines(tok, tmpl, a.add_generation_prompt, std::cin, "<stdin>");
    } else {
      std::ifstream in(a.input_file, std::ios::binary);
      if (!in) fail("[tokenize] cannot open ", a.input_file);
      tokenize_chat_lines(tok, tmpl, a.add_generation_prompt, in, a.input_file);
    }
  } else if (a.input_file == "-") {
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
  add_bool_flag(*cmd, "--add_special_tokens", args->add_special_tokens,
                "Add the post-processor's special tokens", "loom tokenize")
      ->default_str(args->add_special_tokens ? "true" : "false");
  add_bool_flag(*cmd, "--chat", args->chat,
                "Lines are conversations ({\"messages\": [...], \"tools\": [...]}); prints "
                "{\"text\", \"input_ids\", \"assistant_masks\"} per line",
                "loom tokenize");
  cmd->add_option("--chat_template_path", args->chat_template_path,
                  "Jinja chat template file (default: the tokenizer folder's chat_template.jinja "
                  "or tokenizer_config.json's chat_template)");
  add_bool_flag(*cmd, "--add_generation_prompt", args->add_generation_prompt,
                "With --chat: end with the assistant header", "loom tokenize")
      ->default_str(args->add_generation_prompt ? "true" : "false");
  cmd->allow_extras();
  cmd->callback([args, cmd] {
    check_unknown_flags(*cmd, "tokenize");
    run_tokenize(*args);
  });
}

}  // namespace loom::cli
