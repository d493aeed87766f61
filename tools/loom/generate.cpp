// `loom generate`: continues a prompt with a GPT-2 model saved by
// save_pretrained (or a Trainer checkpoint), greedy by default or sampled
// with temperature / top-k / top-p, through loom::generate (static KV cache:
// on the lazy device the prompt pass and the one-token step are the only two
// compiled graphs). Prints the prompt and its continuation to stdout and the
// timing (tokens/s) and, on the lazy device, the compile counters to stderr.
// With --chat the prompt is a conversation (--prompt as one user message,
// after --system; or --messages FILE.json) rendered by the model's chat
// template with the generation prompt (data/sft/chat_turns.h finds the
// template's end-of-turn token, which stops generation as eos does); only
// the assistant's reply is printed.
// Assumes the tokenizer files are in --tokenizer_name, else in the model dir.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "data/sft/chat_turns.h"
#include "flags.h"
#include "io/text_files.h"
#include "loom/chat_template.h"
#include "loom/error.h"
#include "loom/generation.h"
#include "loom/hub.h"
#include "loom/lazy.h"
#include "loom/metrics.h"
#include "loom/models.h"
#include "loom/tokenizer.h"
#include "loom/xla_plugin.h"
#include "number_flags.h"
#include "unknown_flags.h"

namespace loom::cli {
namespace {

struct GenerateArgs {
  std::string model_name_or_path, tokenizer_name, prompt, device = "lazy", revision = "main";
  std::string xla_plugin;                            // --xla_plugin: the PJRT plugin for lazy:xla
  std::string system, messages, chat_template_path;  // --chat
  bool chat = false;
  int64_t max_new_tokens = 20, top_k = 50, seed = 42;
  double temperature = 1.0, top_p = 1.0, repetition_penalty = 1.0;
  bool do_sample = false, use_cache = true, skip_special_tokens = false;
};

// "GPT2LMHeadModel, LlamaForCausalLM, ...": every registered causal-LM class.
std::string causal_lm_class_names() {
  std::string out;
  for (const ModelTypeEntry& e : model_types())
    if (const ArchitectureEntry* a = e.for_task(kTaskCausalLM))
      out += (out.empty() ? "" : ", ") + a->name;
  return out;
}

std::shared_ptr<CausalLM> load_causal_lm(const std::string& dir, const Device& device) {
  std::shared_ptr<PretrainedModel> model = auto_from_pretrained(dir, device);
  auto lm = std::dynamic_pointer_cast<CausalLM>(model);
  if (!lm)
    fail("[generate] ", dir, " holds a ", model->architecture(), "; generate needs a causal LM (",
         causal_lm_class_names(), ")");
  lm->eval();
  return lm;
}

// Prompt ids [1,T]; an empty prompt starts from the bos token, as transformers.
Tensor prompt_ids(const Tokenizer& tok, const std::string& text,
                  const std::optional<int64_t>& config_bos) {
  std::vector<int64_t> ids;
  for (int32_t id : tok.encode(text).ids) ids.push_back(id);
  if (ids.empty()) {
    std::optional<int64_t> bos =
        tok.bos_token_id() ? std::optional<int64_t>(*tok.bos_token_id()) : config_bos;
    if (!bos) fail("[generate] the prompt is empty and the model has no bos_token_id");
    ids.push_back(*bos);
  }
  return tensor_i64(ids, {1, static_cast<int64_t>(ids.size())});
}

// --chat: the conversation rendered with the generation prompt, tokenized
// without special tokens (apply_chat_template(tokenize=True)); the template's
// end-of-turn token and the tokenizer's eos join the stop ids.
Tensor chat_prompt_ids(const GenerateArgs& a, const std::string& tok_dir, const Tokenizer& tok,
                       GenerationConfig& gc) {
  LOOM_CHECK(a.messages.empty() || (a.prompt.empty() && a.system.empty()),
             "[loom generate] --messages replaces --prompt and --system: give one or the other");
  ChatTemplate tmpl = ChatTemplate::from_pretrained(tok_dir, a.chat_template_path);
  ChatInput in;
  if (!a.messages.empty())
    LOOM_CHECK(std::filesystem::is_regular_file(a.messages), "[loom generate] --messages '",
               a.messages, "': no such file");
  in.messages_json = a.messages.empty() ? data::chat_messages_json(a.prompt, a.system)
                                        : io::read_file_text(a.messages, "loom generate");
  in.add_generation_prompt = true;
  std::string text;
  try {
    text = tmpl.apply(in).text;
  } catch (const Error& e) {
    fail("[loom generate] ", a.messages.empty() ? "--prompt" : "--messages '" + a.messages + "'",
         ": chat template ", tmpl.name(), ": ", e.what());
  }
  EncodeOptions e;
  e.add_special_tokens = false;
  std::vector<int64_t> ids;
  for (int32_t id : tok.encode(text, e).ids) ids.push_back(id);
  LOOM_CHECK(!ids.empty(), "[loom generate] the chat template ", tmpl.name(),
             " rendered an empty prompt");
  for (std::optional<int32_t> stop : {data::end_of_turn_id(tmpl, tok), tok.eos_token_id()})
    if (stop) gc.eos_token_ids.push_back(*stop);
  return tensor_i64(ids, {1, static_cast<int64_t>(ids.size())});
}

// The reply: the new tokens up to (not including) the first stop id.
std::vector<int32_t> reply_ids(const GenerateOutput& out, int64_t prompt_tokens,
                               const GenerationConfig& gc) {
  std::vector<int32_t> reply;
  const std::vector<int64_t> all = out.sequences.to_vector<int64_t>();
  for (size_t i = static_cast<size_t>(prompt_tokens); i < all.size(); ++i) {
    const bool stop = (gc.eos_token_id && all[i] == *gc.eos_token_id) ||
                      std::find(gc.eos_token_ids.begin(), gc.eos_token_ids.end(), all[i]) !=
                          gc.eos_token_ids.end();
    if (stop) break;
    reply.push_back(static_cast<int32_t>(all[i]));
  }
  return reply;
}

// The stderr summary: tokens, time, tokens/s after the prompt pass and, on
// the lazy device, the graphs compiled by this generation.
void print_summary(const GenerateOutput& out, int64_t prompt_tokens, const Device& device,
                   int64_t compiles) {
  double total = out.prefill_seconds + out.decode_seconds;
  std::cerr << "loom: " << out.new_tokens << " new tokens after " << prompt_tokens
            << " prompt tokens in " << total << " s on " << device.str() << " (prompt pass "
            << out.prefill_seconds << " s; "
            << (out.new_tokens > 1 ? (out.new_tokens - 1) / out.decode_seconds : 0.0)
            << " tokens/s after it)";
  if (device.is_lazy()) std::cerr << "; graphs compiled: " << compiles;
  std::cerr << "\n";
}

void run_generate(const GenerateArgs& a) {
  if (a.model_name_or_path.empty()) fail("[loom generate] --model_name_or_path is required");
  LOOM_CHECK(a.seed >= 0, "[loom generate] --seed: must be >= 0, got ", a.seed);
  GenerationConfig gc;
  gc.max_new_tokens = a.max_new_tokens;
  gc.do_sample = a.do_sample;
  gc.temperature = a.temperature;
  gc.top_k = a.top_k;
  gc.top_p = a.top_p;
  gc.repetition_penalty = a.repetition_penalty;
  gc.use_cache = a.use_cache;
  gc.validate();  // before loading anything
  if (!a.xla_plugin.empty()) backends::xla::set_pjrt_plugin_path(a.xla_plugin);
  Device device(a.device);
  lazy::check_device(device);
  // A hub id: its snapshot in the local Hugging Face cache (loom/hub.h).
  const std::string model_dir =
      resolve_model_dir(a.model_name_or_path, a.revision, "[loom generate] --model_name_or_path");
  auto model = load_causal_lm(model_dir, device);
  const std::string tok_dir =
      a.tokenizer_name.empty()
          ? model_dir
          : resolve_model_dir(a.tokenizer_name, a.revision, "[loom generate] --tokenizer_name");
  Tokenizer tok = Tokenizer::from_pretrained(tok_dir);
  gc.eos_token_id = model->pretrained_config().eos_token_id;
  gc.eos_token_ids = model->pretrained_config().eos_token_ids;
  gc.pad_token_id = model->pretrained_config().pad_token_id;
  manual_seed(static_cast<uint64_t>(a.seed));
  const bool chat = a.chat || !a.messages.empty();
  Tensor ids = chat ? chat_prompt_ids(a, tok_dir, tok, gc)
                    : prompt_ids(tok, a.prompt, model->pretrained_config().bos_token_id);
  int64_t compiles_before = metrics::counter("UncachedCompile");
  GenerateOutput out = generate(*model, ids.to(device), gc);
  std::vector<int32_t> all;
  for (int64_t id : out.sequences.to_vector<int64_t>()) all.push_back(static_cast<int32_t>(id));
  if (chat)
    std::cout << tok.decode(reply_ids(out, ids.size(1), gc), true) << std::endl;
  else
    std::cout << tok.decode(all, a.skip_special_tokens) << std::endl;
  print_summary(out, ids.size(1), device, metrics::counter("UncachedCompile") - compiles_before);
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "generate", "Continue a prompt with a causal LM: " + model_types_for_task(kTaskCausalLM) +
                      " (greedy, or sampled with --do_sample)");
  cmd->add_option("--model_name_or_path", args->model_name_or_path,
                  "Model directory (config.json + model.safetensors), checkpoint, PEFT adapter "
                  "directory, or hub id in the local Hugging Face cache (required)");
  cmd->add_option("--tokenizer_name", args->tokenizer_name,
                  "Tokenizer directory (default: the model directory)");
  cmd->add_option("--revision", args->revision,
                  "Hub ids: the branch, tag or commit of the cached snapshot")
      ->capture_default_str();
  cmd->add_option("--prompt", args->prompt,
                  "Text to continue (empty: start from bos); with --chat the user's message");
  add_bool_flag(*cmd, "--chat", args->chat,
                "Render --prompt (one user message, after --system) with the model's chat "
                "template and the generation prompt; stop at its end-of-turn token and print "
                "only the reply",
                "loom generate");
  cmd->add_option("--system", args->system, "--chat: a system message before the user's");
  cmd->add_option("--messages", args->messages,
                  "--chat with a conversation: a .json file holding a list of {role, content} "
                  "messages (implies --chat)");
  cmd->add_option("--chat_template_path", args->chat_template_path,
                  "--chat: a .jinja template replacing the tokenizer's");
  cmd->add_option("--max_new_tokens", args->max_new_tokens, "Tokens to generate")
      ->check(decimal_integer())
      ->capture_default_str();
  add_bool_flag(*cmd, "--do_sample", args->do_sample, "Sample instead of greedy decoding",
                "loom generate");
  cmd->add_option("--temperature", args->temperature, "Sampling temperature (> 0)")
      ->check(decimal_number())
      ->capture_default_str();
  cmd->add_option("--top_k", args->top_k, "Keep the k most likely tokens (0: off)")
      ->check(decimal_integer())
      ->capture_default_str();
  cmd->add_option("--top_p", args->top_p, "Nucleus sampling mass in (0, 1] (1: off)")
      ->check(decimal_number())
      ->capture_default_str();
  cmd->add_option("--repetition_penalty", args->repetition_penalty,
                  "Divide (multiply, when negative) the logits of tokens already in the text by "
                  "this (> 0; 1: off), as transformers")
      ->check(decimal_number())
      ->capture_default_str();
  add_bool_flag(*cmd, "--skip_special_tokens", args->skip_special_tokens,
                "Leave special tokens (<|endoftext|>, ...) out of the printed text",
                "loom generate");
  cmd->add_option("--seed", args->seed, "Seed of loom's generator (sampling)")
      ->check(decimal_integer())
      ->capture_default_str();
  cmd->add_option("--device", args->device,
                  "lazy (default), lazy:<backend>[:<index>], or cpu (eager)")
      ->capture_default_str();
  cmd->add_option("--xla_plugin", args->xla_plugin,
                  "PJRT plugin .so for --device lazy:xla (default: PJRT_DEVICE's pip wheel)");
  add_bool_flag(*cmd, "--no_cache", args->use_cache,
                "Recompute the whole sequence each step instead of the static KV cache",
                "loom generate", /*negate=*/true);
  cmd->allow_extras();
  cmd->callback([args, cmd] {
    check_unknown_flags(*cmd, "generate");
    run_generate(*args);
  });
}

}  // namespace loom::cli
