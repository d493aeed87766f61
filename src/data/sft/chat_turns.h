// What a chat generation needs besides the template's rendering
// (`loom generate --chat`): the messages of one user turn (plus a system
// turn), and the template's end-of-turn token, found by rendering a short
// conversation and reading what follows the assistant's content (Qwen's
// <|im_end|>, Llama 3's <|eot_id|>, Gemma's <end_of_turn>, Mistral's </s>,
// Phi-3's <|end|>), so generation stops where the template ends a reply.
// Header-only (three short functions).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "loom/chat_template.h"
#include "loom/tokenizer.h"

namespace loom::data {

// An assistant content no template changes; what follows it ends the turn.
inline constexpr const char* kChatReplyMarker = "loom0reply0marker";

/// The JSON array [{"role": "system", "content": system} (when non-empty),
/// {"role": "user", "content": prompt}].
inline std::string chat_messages_json(const std::string& prompt, const std::string& system) {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
  messages.push_back({{"role", "user"}, {"content", prompt}});
  return messages.dump();
}

/// The text `tmpl` renders right after an assistant message's content, up to
/// the first whitespace ("<|im_end|>" for Qwen's templates); "" when it
/// renders nothing there. Throws loom::Error when the template raises for a
/// user + assistant conversation. `variables_json`: more template
/// variables (ChatInput::variables_json), for a template read from a file
/// that uses eos_token / bos_token.
inline std::string end_of_turn_text(const ChatTemplate& tmpl,
                                    const std::string& variables_json = "") {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  messages.push_back({{"role", "user"}, {"content", "Hi"}});
  messages.push_back({{"role", "assistant"}, {"content", kChatReplyMarker}});
  ChatInput in;
  in.messages_json = messages.dump();
  in.add_generation_prompt = false;
  in.variables_json = variables_json;
  const std::string text = tmpl.apply(in).text;
  const size_t at = text.rfind(kChatReplyMarker);
  if (at == std::string::npos) return "";
  const std::string after = text.substr(at + std::string(kChatReplyMarker).size());
  const size_t begin = after.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  const size_t end = after.find_first_of(" \t\r\n", begin);
  return after.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

/// The id of end_of_turn_text(tmpl) in `tok`'s vocabulary (added tokens
/// included); nullopt when that text is empty or not one token.
inline std::optional<int32_t> end_of_turn_id(const ChatTemplate& tmpl, const Tokenizer& tok) {
  const std::string text = end_of_turn_text(tmpl);
  if (text.empty()) return std::nullopt;
  return tok.token_to_id(text);
}

}  // namespace loom::data
