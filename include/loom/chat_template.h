// loom::ChatTemplate: a model's Jinja chat template rendered in C++, byte-identical to
// transformers' `apply_chat_template` (Jinja2's ImmutableSandboxedEnvironment with
// trim_blocks, lstrip_blocks, loop controls, raise_exception, strftime_now, tojson and
// `{% generation %}`), for the constructs listed in docs/chat_templates.md.
//
// Example:
//   loom::ChatTemplate t = loom::ChatTemplate::from_file("Qwen-Qwen3-0.6B.jinja");
//   loom::ChatInput in;
//   in.messages_json = R"([{"role": "user", "content": "Hi"}])";
//   in.add_generation_prompt = true;
//   loom::ChatRendered r = t.apply(in);
//   // r.text == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
//
//   loom::Encoding e = tok.encode(r.text, {.add_special_tokens = false, .return_offsets = true});
//   std::vector<int32_t> mask = loom::assistant_token_mask(e.offsets, r.generation);
//
// Every error is a loom::Error "[chat_template] <name> line N: <what>": a syntax error or a
// construct loom does not implement when the template is loaded, an evaluation error (an
// attribute of an undefined value, `'a' + 1`, ...) or the template's own
// raise_exception("msg") ("... raise_exception: msg") when it is rendered. Never a silently
// different prompt.
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "loom/tokenizer.h"

namespace loom {

/// Byte range [begin, end) of a ChatRendered::text.
struct ChatRange {
  int64_t begin = 0;
  int64_t end = 0;
  bool operator==(const ChatRange&) const = default;
};

/// A rendered conversation.
struct ChatRendered {
  std::string text;                   ///< the prompt, UTF-8
  std::vector<ChatRange> generation;  ///< what each `{% generation %}` block rendered, in order
};

/// What apply() renders: the arguments of transformers' apply_chat_template.
struct ChatInput {
  std::string messages_json;  ///< JSON array of message objects ({"role", "content", ...})
  std::string tools_json;     ///< JSON array of tool schemas; empty: no tools (`tools` is None)
  bool add_generation_prompt = false;
  /// Empty, or a JSON object of more template variables (bos_token, enable_thinking, ...);
  /// they override the special tokens from_pretrained() read.
  std::string variables_json;
  /// The clock strftime_now() reads (local time); nullopt: now.
  std::optional<std::time_t> now;
};

class ChatTemplate {
 public:
  /// Parses `source`; `name` (e.g. the file name) is what errors cite. Throws loom::Error for a
  /// syntax error or an unsupported construct.
  ChatTemplate(const std::string& source, const std::string& name);

  /// Reads and parses a `.jinja` file; errors name the file's base name.
  static ChatTemplate from_file(const std::string& path);

  /// A model folder's template: `chat_template.jinja` if present, else tokenizer_config.json's
  /// `chat_template` (a string, or the entry named "default" of a list). The special tokens of
  /// tokenizer_config.json (bos_token, eos_token, unk_token, pad_token, ...) become template
  /// variables, as transformers passes its special_tokens_map. A non-empty `template_path`
  /// (transformers' chat_template_path) replaces the folder's template. Throws loom::Error
  /// when there is no template.
  static ChatTemplate from_pretrained(const std::string& dir,
                                      const std::string& template_path = "");

  /// Renders a conversation as transformers' apply_chat_template does (messages with None
  /// fields dropped, reasoning fields aliased to `reasoning_content` and `thinking`; variables
  /// messages, tools, documents=None, add_generation_prompt). Throws loom::Error for malformed
  /// JSON (naming the field) or a template error.
  ChatRendered apply(const ChatInput& input) const;

  /// Renders with exactly the variables of `context_json` (a JSON object).
  ChatRendered render(const std::string& context_json,
                      std::optional<std::time_t> now = std::nullopt) const;

  const std::string& name() const;
  /// True when the source has a `{% generation %}` tag (TRL's has_generation_markers: what
  /// assistant_only_loss needs).
  bool has_generation_markers() const;
  /// The template variables from_pretrained() read (a JSON object; "{}" otherwise).
  const std::string& special_tokens_json() const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

/// Assistant mask of a tokenized ChatRendered::text: 1 for each token whose byte offsets
/// overlap a generation range (begin < range.end and end > range.begin, transformers' rule in
/// apply_chat_template), else 0. `offsets` come from Tokenizer::encode with return_offsets
/// (add_special_tokens = false, as transformers tokenizes the rendered text).
std::vector<int32_t> assistant_token_mask(std::span<const TokenOffset> offsets,
                                          std::span<const ChatRange> ranges);

}  // namespace loom
