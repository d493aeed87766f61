// loom::ChatTemplate (include/loom/chat_template.h): loads a template, builds the variables
// transformers' apply_chat_template passes (transformers/utils/chat_template_utils.py:
// _normalize_chat_messages drops None-valued fields; _alias_reasoning_fields fills
// `thinking` first and `reasoning_content` last from reasoning_content/thinking/reasoning;
// render_jinja_template passes messages, tools, documents, add_generation_prompt and the
// special tokens), renders, and maps generation ranges onto tokens.
#include "loom/chat_template.h"

#include <filesystem>
#include <regex>

#include "data/chat_template/evaluator.h"
#include "data/chat_template/globals.h"
#include "data/chat_template/lexer.h"
#include "data/chat_template/parser.h"
#include "io/json_parse.h"
#include "io/text_files.h"
#include "loom/error.h"

namespace loom {

struct ChatTemplate::Impl {
  std::string name;
  jinja::Body body;
  std::string special_tokens_json = "{}";
  bool has_generation_markers = false;
};

namespace {

using OJson = nlohmann::ordered_json;

OJson parse_field(const std::string& text, const std::string& name, const char* field) {
  return io::parse_json<OJson>(text, "[chat_template] " + name + " " + field);
}

// transformers' _normalize_chat_messages + _alias_reasoning_fields.
jinja::Value prepare_messages(const OJson& messages, const std::string& name) {
  LOOM_CHECK(messages.is_array(), "[chat_template] ", name,
             " messages: expected a JSON array, got ", messages.type_name());
  jinja::List out;
  for (const OJson& m : messages) {
    LOOM_CHECK(m.is_object(), "[chat_template] ", name,
               " messages: each message must be a JSON object, got ", m.type_name());
    jinja::Dict d;
    for (const auto& [k, v] : m.items()) {
      if (!v.is_null()) d.emplace_back(k, jinja::from_json(v));
    }
    const jinja::Value* reasoning = nullptr;
    for (const char* key : {"reasoning_content", "thinking", "reasoning"}) {
      if (reasoning == nullptr) reasoning = jinja::dict_find(d, key);
    }
    if (reasoning != nullptr) {
      jinja::Value r = *reasoning;
      const jinja::Value* own = jinja::dict_find(d, "thinking");
      jinja::Dict aliased{{"thinking", own != nullptr ? *own : r}};
      for (auto& [k, v] : d) {
        if (k != "thinking" && k != "reasoning_content") aliased.emplace_back(k, v);
        if (k == "reasoning_content") aliased.emplace_back(k, r);
      }
      if (jinja::dict_find(d, "reasoning_content") == nullptr)
        aliased.emplace_back("reasoning_content", r);
      d = std::move(aliased);
    }
    out.emplace_back(std::move(d));
  }
  return out;
}

ChatRendered to_public(jinja::RenderResult r) {
  ChatRendered out;
  out.text = std::move(r.text);
  for (const auto& [b, e] : r.generation) {
    out.generation.push_back({static_cast<int64_t>(b), static_cast<int64_t>(e)});
  }
  return out;
}

// A special token in tokenizer_config.json: a string or an AddedToken object {"content": ...}.
void add_special_tokens(const nlohmann::json& config, OJson& vars) {
  for (auto it = config.begin(); it != config.end(); ++it) {
    const std::string& key = it.key();
    if (key.size() < 7 || key.compare(key.size() - 6, 6, "_token") != 0) continue;
    if (it->is_string()) vars[key] = it->get<std::string>();
    if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
      vars[key] = (*it)["content"].get<std::string>();
    }
  }
}

}  // namespace

ChatTemplate::ChatTemplate(const std::string& source, const std::string& name) {
  auto impl = std::make_shared<Impl>();
  impl->name = name;
  // TRL's has_generation_markers (chat_template_utils.py): the source text has a
  // `{% generation %}` tag, whitespace-trim variants included.
  static const std::regex kGeneration(R"(\{%-?\s*generation\s*-?%\})");
  impl->has_generation_markers = std::regex_search(source, kGeneration);
  try {
    impl->body = jinja::parse(jinja::lex(source, name), name);
  } catch (const std::logic_error& e) {  // a number literal std::stoll/stod refuse
    fail("[chat_template] ", name, ": bad literal (", e.what(), ")");
  }
  impl_ = std::move(impl);
}

ChatTemplate ChatTemplate::from_file(const std::string& path) {
  std::string source = io::read_file_text(path, "chat_template");
  return ChatTemplate(source, std::filesystem::path(path).filename().string());
}

ChatTemplate ChatTemplate::from_pretrained(const std::string& dir,
                                           const std::string& template_path) {
  namespace fs = std::filesystem;
  fs::path jinja_file = fs::path(dir) / "chat_template.jinja";
  fs::path config_file = fs::path(dir) / "tokenizer_config.json";
  OJson vars = OJson::object();
  std::optional<std::string> source;
  std::string name;
  if (fs::exists(config_file)) {
    std::string text = io::read_file_text(config_file.string(), "chat_template");
    auto config = io::parse_json(text, "[chat_template] " + config_file.string());
    add_special_tokens(config, vars);
    const auto ct = config.find("chat_template");
    if (ct != config.end() && ct->is_string()) source = ct->get<std::string>();
    if (ct != config.end() && ct->is_array()) {
      for (const auto& entry : *ct) {
        if (entry.value("name", "") == "default" && entry.contains("template")) {
          source = entry["template"].get<std::string>();
        }
      }
    }
    name = config_file.filename().string();
  }
  if (!template_path.empty()) jinja_file = template_path;
  if (!template_path.empty() || fs::exists(jinja_file)) {
    source = io::read_file_text(jinja_file.string(), "chat_template");
    name = jinja_file.filename().string();
  }
  LOOM_CHECK(source.has_value(), "[chat_template] ", dir,
             ": no chat_template.jinja and no chat_template in tokenizer_config.json");
  ChatTemplate t(*source, name);
  auto impl = std::make_shared<Impl>(std::move(*std::const_pointer_cast<Impl>(t.impl_)));
  impl->special_tokens_json = vars.dump();
  t.impl_ = std::move(impl);
  return t;
}

ChatRendered ChatTemplate::apply(const ChatInput& input) const {
  const std::string& name = impl_->name;
  jinja::Dict context;
  OJson vars = parse_field(impl_->special_tokens_json, name, "special tokens");
  if (!input.variables_json.empty()) {
    OJson extra = parse_field(input.variables_json, name, "variables");
    LOOM_CHECK(extra.is_object(), "[chat_template] ", name, " variables: expected a JSON object");
    for (const auto& [k, v] : extra.items()) vars[k] = v;
  }
  for (const auto& [k, v] : vars.items()) {
    if (k != "messages" && k != "tools" && k != "documents" && k != "add_generation_prompt") {
      context.emplace_back(k, jinja::from_json(v));
    }
  }
  context.emplace_back("messages",
                       prepare_messages(parse_field(input.messages_json, name, "messages"), name));
  jinja::Value tools = jinja::NoneType{};
  if (!input.tools_json.empty()) {
    OJson t = parse_field(input.tools_json, name, "tools");
    LOOM_CHECK(t.is_array() || t.is_null(), "[chat_template] ", name,
               " tools: expected a JSON array");
    tools = jinja::from_json(t);
  }
  context.emplace_back("tools", tools);
  context.emplace_back("documents", jinja::NoneType{});
  context.emplace_back("add_generation_prompt", input.add_generation_prompt);
  return to_public(jinja::render(impl_->body, context, jinja::make_globals(input.now), name));
}

ChatRendered ChatTemplate::render(const std::string& context_json,
                                  std::optional<std::time_t> now) const {
  OJson j = parse_field(context_json, impl_->name, "context");
  LOOM_CHECK(j.is_object(), "[chat_template] ", impl_->name, " context: expected a JSON object");
  jinja::Value ctx = jinja::from_json(j);
  return to_public(jinja::render(impl_->body, ctx.dict(), jinja::make_globals(now), impl_->name));
}

bool ChatTemplate::has_generation_markers() const { return impl_->has_generation_markers; }

const std::string& ChatTemplate::name() const { return impl_->name; }

const std::string& ChatTemplate::special_tokens_json() const { return impl_->special_tokens_json; }

std::vector<int32_t> assistant_token_mask(std::span<const TokenOffset> offsets,
                                          std::span<const ChatRange> ranges) {
  std::vector<int32_t> mask(offsets.size(), 0);
  for (size_t i = 0; i < offsets.size(); ++i) {
    const TokenOffset& o = offsets[i];
    for (const ChatRange& r : ranges) {
      if (o.begin < r.end && o.end > r.begin) mask[i] = 1;
    }
  }
  return mask;
}

}  // namespace loom
