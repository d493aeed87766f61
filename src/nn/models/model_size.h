// Model sizes known from a config alone, before anything is allocated: the
// parameter count (transformers' module layout, counted in double so that
// 2^63-wide configs do not overflow) and the shapes of the tensors whose
// sizes the config sets. Used to refuse a config that cannot fit in memory
// and a checkpoint whose shapes disagree with its config.json, with a clear
// loom::Error instead of std::bad_alloc, the OOM killer or a 2.5 GB
// allocation that is thrown away. Internal to src/nn (and the CLI).
#pragma once

#include <string>
#include <vector>

#include "loom/config.h"
#include "loom/llama_config.h"
#include "loom/shape.h"

namespace loom::models {

/// Parameters of GPT2Model for `c` (the LM head is tied to wte):
/// V*E + P*E + 2E + L*(4E + (3E*E + 3E) + (E*E + E) + (E*I + I) + (I*E + E)).
double gpt2_parameter_count(const GPT2Config& c);
/// Parameters of BertModel for `c` with its pooler:
/// (V + P + T)*H + 2H + L*(4(H*H + H) + 4H + (H*I + I) + (I*H + H)) + H*H + H.
double bert_parameter_count(const BertConfig& c);

/// Parameters of LlamaModel for `c` (transformers' modeling_llama.py layout), plus the
/// untied lm_head when `lm_head` and !tie_word_embeddings. With A = heads*head_dim,
/// K = kv_heads*head_dim: V*H + H + L*(2H + H*A + 2*H*K + A*H + 3*H*I [+ biases]).
double llama_parameter_count(const LlamaConfig& c, bool lm_head = true);

/// "n_layer 2000, n_embd 64, ..." — the sizes that make up the count.
std::string gpt2_size_text(const GPT2Config& c);
std::string bert_size_text(const BertConfig& c);
std::string llama_size_text(const LlamaConfig& c);

/// Throws loom::Error "<prefix> <sizes> make <N> parameters: <bytes> as f32
/// [x copies (<why>)], more than the <M> of memory available (<source>);
/// lower them in config.json or --config_overrides" when parameters x 4
/// bytes x `copies` exceeds the available memory (nothing is checked when the
/// system reports none). `prefix` is e.g. "[GPT2Model]".
void check_parameters_fit(const std::string& prefix, double parameters, const std::string& sizes,
                          double copies = 1, const std::string& why = "the weights");

/// A tensor whose shape follows from the config, named as in the base model
/// (no "transformer." / "bert." prefix).
struct ConfigTensor {
  std::string name;
  Shape shape;
  std::string fields;  ///< the config fields that set it, e.g. "n_positions, n_embd"
};
std::vector<ConfigTensor> gpt2_config_tensors(const GPT2Config& c);
std::vector<ConfigTensor> bert_config_tensors(const BertConfig& c);
std::vector<ConfigTensor> llama_config_tensors(const LlamaConfig& c);

}  // namespace loom::models
