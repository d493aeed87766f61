// SFT examples (sft_examples.h): TRL's SFTTrainer._prepare_dataset for rows
// read from JSON, in its order of steps: add_eos (non-conversational rows),
// tokenize_fn (prompt-completion / conversational / text), build_labels, the
// keep_start truncation and the filter of rows without a label token. The
// facts followed are TRL 1.16's (trl/trainer/sft_trainer.py, data_utils.py).
// Assumes ChatTemplate::apply renders as transformers' apply_chat_template
// and assistant_token_mask is its return_assistant_tokens_mask rule.
#include "data/sft/sft_examples.h"

#include <algorithm>
#include <exception>
#include <set>

#include "core/parallel.h"
#include "loom/error.h"

namespace loom::data {
namespace {

using OJson = nlohmann::ordered_json;

const std::set<std::string>& known_roles() {
  static const std::set<std::string> roles = {"system", "user", "assistant", "tool"};
  return roles;
}

// TRL's is_conversational: a list whose first element is an object with "role".
bool is_message_list(const OJson& v) {
  return v.is_array() && !v.empty() && v.front().is_object() && v.front().contains("role");
}

std::string keys_of(const OJson& row) {
  std::string out;
  for (const auto& [k, v] : row.items()) out += (out.empty() ? "" : ", ") + k;
  return out.empty() ? "none" : out;
}

// A message list the chat template can take: objects with a known string role and content.
void check_messages(const OJson& list, const std::string& where, const std::string& field) {
  LOOM_CHECK(list.is_array() && !list.empty(), "[sft] ", where, ": field '", field,
             "': expected a non-empty list of messages, got ", list.type_name());
  for (size_t i = 0; i < list.size(); ++i) {
    const OJson& m = list[i];
    const std::string at = field + "[" + std::to_string(i) + "]";
    LOOM_CHECK(m.is_object(), "[sft] ", where, ": field '", at, "': expected a message object");
    LOOM_CHECK(m.contains("role") && m["role"].is_string(), "[sft] ", where, ": field '", at,
               ".role': expected a string (system, user, assistant or tool)");
    const std::string role = m["role"].get<std::string>();
    LOOM_CHECK(known_roles().count(role), "[sft] ", where, ": field '", at,
               ".role': unknown role '", role, "' (expected system, user, assistant or tool)");
    // A tool-calling assistant turn may have no content (null) but tool_calls.
    const bool calls = role == "assistant" && m.contains("tool_calls");
    LOOM_CHECK(m.contains("content") || calls, "[sft] ", where, ": field '", at,
               ".content': missing");
  }
}

std::string string_field(const OJson& row, const std::string& key, const std::string& where) {
  LOOM_CHECK(row[key].is_string(), "[sft] ", where, ": field '", key, "': expected a string, got ",
             row[key].type_name());
  return row[key].get<std::string>();
}

// TRL's add_eos: text that does not already end with the EOS token gets it.
std::string with_eos(std::string text, const SftOptions& o) {
  const std::string& eos = o.eos_token;
  if (text.size() < eos.size() || text.compare(text.size() - eos.size(), eos.size(), eos) != 0)
    text += eos;
  return text;
}

std::vector<int64_t> encode_text(const Tokenizer& tok, const std::string& text) {
  EncodeOptions e = tok.default_options();  // tokenizer(text): special tokens added
  e.truncation.reset();
  e.padding.reset();
  e.return_offsets = false;
  Encoding enc = tok.encode(text, e);
  return {enc.ids.begin(), enc.ids.end()};
}

struct Rendered {
  std::vector<int64_t> ids;
  std::vector<int32_t> assistant;  // empty unless asked for
};

// apply_chat_template(messages, tools=, tokenize=True, return_dict=True, ...).
Rendered render(const ChatTemplate& tmpl, const Tokenizer& tok, const OJson& messages,
                const OJson& row, bool add_generation_prompt, bool assistant_mask,
                const SftOptions& o, const std::string& where) {
  ChatInput in;
  in.messages_json = messages.dump();
  if (row.contains("tools") && !row["tools"].is_null()) {
    // TRL: a tools string holds JSON (json.loads).
    in.tools_json =
        row["tools"].is_string() ? row["tools"].get<std::string>() : row["tools"].dump();
  }
  OJson vars = OJson::object();
  if (!o.template_eos_token.empty()) vars["eos_token"] = o.template_eos_token;
  if (row.contains("chat_template_kwargs") && row["chat_template_kwargs"].is_object())
    vars.update(row["chat_template_kwargs"]);
  if (!vars.empty()) in.variables_json = vars.dump();
  in.add_generation_prompt = add_generation_prompt;
  ChatRendered r;
  try {
    r = tmpl.apply(in);
  } catch (const Error& e) {
    fail("[sft] ", where, ": chat template ", tmpl.name(), ": ", e.what());
  }
  EncodeOptions e;
  e.add_special_tokens = false;
  e.return_offsets = assistant_mask;
  Encoding enc = tok.encode(r.text, e);
  Rendered out{{enc.ids.begin(), enc.ids.end()}, {}};
  if (assistant_mask) out.assistant = assistant_token_mask(enc.offsets, r.generation);
  return out;
}

const ChatTemplate& need_template(const ChatTemplate* tmpl, const std::string& where) {
  LOOM_CHECK(tmpl != nullptr, "[sft] ", where,
             ": conversational rows need a chat template: the tokenizer folder has none "
             "(chat_template.jinja or tokenizer_config.json's chat_template); give "
             "--chat_template_path FILE.jinja");
  return *tmpl;
}

// TRL's common_prefix_length: the completion starts where the two diverge.
size_t common_prefix(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// build_labels: input_ids where every applicable mask is 1, else -100.
std::vector<int64_t> labels_of(const std::vector<int64_t>& ids,
                               const std::vector<int32_t>* completion,
                               const std::vector<int32_t>* assistant) {
  std::vector<int64_t> labels(ids);
  for (size_t i = 0; i < ids.size(); ++i) {
    if ((completion && (*completion)[i] == 0) || (assistant && (*assistant)[i] == 0))
      labels[i] = -100;
  }
  return labels;
}

Example prompt_completion(const SftRow& row, bool conversational, const Tokenizer& tok,
                          const ChatTemplate* tmpl, const SftOptions& o) {
  const OJson& v = row.value;
  std::vector<int64_t> prompt_ids, ids;
  std::vector<int32_t> assistant;
  if (conversational) {
    check_messages(v["prompt"], row.where, "prompt");
    check_messages(v["completion"], row.where, "completion");
    const ChatTemplate& t = need_template(tmpl, row.where);
    OJson all = v["prompt"];
    for (const OJson& m : v["completion"]) all.push_back(m);
    prompt_ids = render(t, tok, v["prompt"], v, true, false, o, row.where).ids;
    Rendered r = render(t, tok, all, v, false, o.assistant_only_loss, o, row.where);
    ids = std::move(r.ids);
    assistant = std::move(r.assistant);
  } else {
    const std::string prompt = string_field(v, "prompt", row.where);
    const std::string completion = with_eos(string_field(v, "completion", row.where), o);
    prompt_ids = encode_text(tok, prompt);
    ids = encode_text(tok, prompt + completion);
  }
  const size_t prompt_len = common_prefix(prompt_ids, ids);
  std::vector<int32_t> completion(ids.size(), 1);
  std::fill(completion.begin(), completion.begin() + static_cast<int64_t>(prompt_len), 0);
  const bool completion_only = o.completion_only_loss.value_or(true);
  Example ex;
  ex.labels = labels_of(ids, completion_only ? &completion : nullptr,
                        o.assistant_only_loss ? &assistant : nullptr);
  ex.input_ids = std::move(ids);
  if (o.assistant_only_loss) ex.special_tokens_mask.assign(assistant.begin(), assistant.end());
  return ex;
}

// A list of integers (input_ids, a mask), checked.
std::vector<int64_t> int_list(const OJson& row, const std::string& key, const std::string& where) {
  const OJson& v = row[key];
  LOOM_CHECK(v.is_array(), "[sft] ", where, ": field '", key,
             "': expected a list of integers, got ", v.type_name());
  std::vector<int64_t> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    LOOM_CHECK(v[i].is_number_integer(), "[sft] ", where, ": field '", key, "[", i,
               "]': expected an integer, got ", v[i].type_name());
    out.push_back(v[i].get<int64_t>());
  }
  return out;
}

// A pre-tokenized row (TRL's is_processed): its ids, the masks it carries
// folded into labels as build_labels does.
Example tokenized(const SftRow& row, const Tokenizer& tok, const SftOptions& o) {
  const OJson& v = row.value;
  Example ex;
  ex.input_ids = int_list(v, "input_ids", row.where);
  const int64_t vocab = tok.vocab_size();
  for (int64_t id : ex.input_ids)
    LOOM_CHECK(id >= 0 && id < vocab, "[sft] ", row.where, ": field 'input_ids': id ", id,
               " is outside the tokenizer's ", vocab, " tokens");
  auto mask = [&](const char* key) {
    std::vector<int32_t> m;
    for (int64_t x : int_list(v, key, row.where)) m.push_back(static_cast<int32_t>(x));
    LOOM_CHECK(m.size() == ex.input_ids.size(), "[sft] ", row.where, ": field '", key, "' has ",
               m.size(), " entries but input_ids has ", ex.input_ids.size());
    return m;
  };
  std::vector<int32_t> completion, assistant;
  const bool use_completion =
      o.completion_only_loss.value_or(true) && v.contains("completion_mask");
  if (use_completion) completion = mask("completion_mask");
  if (o.assistant_only_loss) {
    LOOM_CHECK(v.contains("assistant_masks"), "[sft] ", row.where,
               ": --assistant_only_loss: a tokenized row needs 'assistant_masks'");
    assistant = mask("assistant_masks");
    ex.special_tokens_mask.assign(assistant.begin(), assistant.end());
  }
  ex.labels = labels_of(ex.input_ids, use_completion ? &completion : nullptr,
                        o.assistant_only_loss ? &assistant : nullptr);
  return ex;
}

}  // namespace

const char* sft_schema_name(SftSchema schema) {
  switch (schema) {
    case SftSchema::kText:
      return "language modeling";
    case SftSchema::kMessages:
      return "conversational";
    case SftSchema::kPromptCompletion:
      return "prompt-completion";
    case SftSchema::kConversationalPromptCompletion:
      return "conversational prompt-completion";
    case SftSchema::kTokenized:
      return "tokenized";
  }
  return "?";
}

SftSchema sft_schema(const SftRow& row, const std::string& dataset_text_field) {
  const OJson& v = row.value;
  LOOM_CHECK(v.is_object(), "[sft] ", row.where, ": expected a JSON object, got ", v.type_name());
  if (v.contains("input_ids")) return SftSchema::kTokenized;
  if (v.contains("prompt")) {
    LOOM_CHECK(v.contains("completion"), "[sft] ", row.where,
               ": field 'completion': missing (a row with 'prompt' is prompt-completion)");
    const bool p = is_message_list(v["prompt"]), c = is_message_list(v["completion"]);
    LOOM_CHECK(p == c, "[sft] ", row.where, ": field '", p ? "completion" : "prompt",
               "': prompt and completion must both be strings or both be message lists");
    return p ? SftSchema::kConversationalPromptCompletion : SftSchema::kPromptCompletion;
  }
  if (v.contains("messages")) return SftSchema::kMessages;
  LOOM_CHECK(v.contains(dataset_text_field), "[sft] ", row.where,
             ": no recognised schema: expected '", dataset_text_field,
             "' (--dataset_text_field), 'messages', 'prompt' + 'completion', or 'input_ids'; the "
             "row has keys: ",
             keys_of(v));
  return SftSchema::kText;
}

Example sft_example(const SftRow& row, SftSchema schema, const Tokenizer& tok,
                    const ChatTemplate* tmpl, const SftOptions& o) {
  const OJson& v = row.value;
  Example ex;
  switch (schema) {
    case SftSchema::kText:
      ex.input_ids =
          encode_text(tok, with_eos(string_field(v, o.dataset_text_field, row.where), o));
      ex.labels = ex.input_ids;
      break;
    case SftSchema::kMessages: {
      check_messages(v["messages"], row.where, "messages");
      Rendered r = render(need_template(tmpl, row.where), tok, v["messages"], v, false,
                          o.assistant_only_loss, o, row.where);
      ex.labels = labels_of(r.ids, nullptr, o.assistant_only_loss ? &r.assistant : nullptr);
      ex.input_ids = std::move(r.ids);
      if (o.assistant_only_loss)
        ex.special_tokens_mask.assign(r.assistant.begin(), r.assistant.end());
      break;
    }
    case SftSchema::kPromptCompletion:
    case SftSchema::kConversationalPromptCompletion:
      ex = prompt_completion(row, schema == SftSchema::kConversationalPromptCompletion, tok, tmpl,
                             o);
      break;
    case SftSchema::kTokenized:
      ex = tokenized(row, tok, o);
      break;
  }
  if (o.assistant_only_loss) {
    // TRL raises RuntimeError: at least one example has no assistant tokens.
    bool any = false;
    for (int64_t m : ex.special_tokens_mask) any = any || m != 0;
    LOOM_CHECK(any, "[sft] ", row.where,
               ": --assistant_only_loss: this conversation has no assistant token (no "
               "{% generation %} block of the template ",
               tmpl ? tmpl->name() : std::string("?"), " rendered any text for it)");
    ex.special_tokens_mask.clear();  // the mask was only carried for this check
  }
  return ex;
}

SftExamples sft_examples(const std::vector<SftRow>& rows, const Tokenizer& tok,
                         const ChatTemplate* tmpl, const SftOptions& o) {
  SftExamples out;
  if (rows.empty()) return out;
  out.schema = sft_schema(rows.front(), o.dataset_text_field);
  for (const SftRow& r : rows) {
    const SftSchema s = sft_schema(r, o.dataset_text_field);
    LOOM_CHECK(s == out.schema, "[sft] ", r.where, ": mixed schemas: this row is ",
               sft_schema_name(s), " but ", rows.front().where, " is ", sft_schema_name(out.schema),
               " (every row of a file must have the first row's schema)");
  }
  const bool conversational = out.schema == SftSchema::kMessages ||
                              out.schema == SftSchema::kConversationalPromptCompletion;
  const bool tokenized_rows = out.schema == SftSchema::kTokenized;
  LOOM_CHECK(!o.assistant_only_loss || conversational || tokenized_rows, "[sft] ",
             rows.front().where,
             ": --assistant_only_loss needs conversational rows ('messages', or 'prompt' + "
             "'completion' message lists), got ",
             sft_schema_name(out.schema));
  LOOM_CHECK(conversational || tokenized_rows || !o.eos_token.empty(), "[sft] ", rows.front().where,
             ": ", sft_schema_name(out.schema),
             " rows get the EOS token appended, but the tokenizer has none: give --eos_token");
  SftOptions opts = o;
  if (!opts.completion_only_loss)
    opts.completion_only_loss = out.schema == SftSchema::kPromptCompletion ||
                                out.schema == SftSchema::kConversationalPromptCompletion ||
                                out.schema == SftSchema::kTokenized;  // its completion_mask, if any
  // Tokenize on all cores; an error is kept per row and the first one rethrown.
  std::vector<Example> all(rows.size());
  std::vector<std::exception_ptr> errors(rows.size());
  parallel_for(static_cast<int64_t>(rows.size()), 8, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const size_t k = static_cast<size_t>(i);
      try {
        all[k] = sft_example(rows[k], out.schema, tok, tmpl, opts);
      } catch (...) {
        errors[k] = std::current_exception();
      }
    }
  });
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  for (Example& ex : all) {
    if (o.max_length) {
      if (static_cast<int64_t>(ex.input_ids.size()) > *o.max_length) {
        ex.input_ids.resize(static_cast<size_t>(*o.max_length));
        ex.labels.resize(static_cast<size_t>(*o.max_length));
        ++out.truncated;
      }
      // With max_length set, TRL drops the rows left without a label token.
      bool any = false;
      for (int64_t l : ex.labels) any = any || l != -100;
      if (!any) {
        ++out.dropped;
        continue;
      }
    }
    out.examples.push_back(std::move(ex));
  }
  return out;
}

}  // namespace loom::data
