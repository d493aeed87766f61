// Parameter counts and config-set tensor shapes of GPT-2, BERT and Llama, from
// the module layout of transformers' modeling_gpt2.py / modeling_bert.py /
// modeling_llama.py (which loom's models follow name for name). See model_size.h.
#include "nn/models/model_size.h"

#include <sstream>

#include "core/memory_info.h"
#include "loom/error.h"

namespace loom::models {
namespace {

double d(int64_t v) { return static_cast<double>(v); }

std::string count_text(double n) {
  std::ostringstream s;
  s.precision(3);
  s << n;
  return s.str();
}

}  // namespace

double gpt2_parameter_count(const GPT2Config& c) {
  const double v = d(c.vocab_size), p = d(c.n_positions), e = d(c.n_embd), l = d(c.n_layer);
  const double i = c.n_inner ? d(*c.n_inner) : 4 * e;  // inner_dim() without int64 overflow
  const double block = 4 * e                           // ln_1, ln_2
                       + (3 * e * e + 3 * e)           // attn.c_attn
                       + (e * e + e)                   // attn.c_proj
                       + (e * i + i)                   // mlp.c_fc
                       + (i * e + e);                  // mlp.c_proj
  return v * e + p * e + 2 * e + l * block;
}

double bert_parameter_count(const BertConfig& c) {
  const double v = d(c.vocab_size), p = d(c.max_position_embeddings), t = d(c.type_vocab_size);
  const double h = d(c.hidden_size), l = d(c.num_hidden_layers), i = d(c.intermediate_size);
  const double layer = 4 * (h * h + h)  // query, key, value, attention.output.dense
                       + 4 * h          // two LayerNorms
                       + (h * i + i)    // intermediate.dense
                       + (i * h + h);   // output.dense
  return (v + p + t) * h + 2 * h + l * layer + (h * h + h);
}

double llama_parameter_count(const LlamaConfig& c, bool lm_head) {
  const double v = d(c.vocab_size), h = d(c.hidden_size), l = d(c.num_hidden_layers);
  const double i = d(c.intermediate_size);
  // head_size() / kv_heads() without int64 products: A = heads*dim, K = kv_heads*dim.
  const double dim = c.head_dim ? d(*c.head_dim) : h / d(c.num_attention_heads);
  const double a = d(c.num_attention_heads) * dim, k = d(c.kv_heads()) * dim;
  const double layer = 2 * h                                        // two RMSNorms
                       + h * a + (c.qkv_bias() ? a : 0)             // q_proj
                       + 2 * (h * k + (c.qkv_bias() ? k : 0))       // k_proj, v_proj
                       + a * h + (c.o_bias() ? h : 0)               // o_proj
                       + 3 * h * i + (c.mlp_bias ? 2 * i + h : 0);  // gate, up, down
  const double head = lm_head && !c.tie_word_embeddings ? v * h : 0;
  return v * h + h + l * layer + head;
}

std::string gpt2_size_text(const GPT2Config& c) {
  std::ostringstream s;
  s << "n_layer " << c.n_layer << ", n_embd " << c.n_embd << ", n_inner "
    << (c.n_inner ? std::to_string(*c.n_inner) : "4*n_embd") << ", n_positions " << c.n_positions
    << ", vocab_size " << c.vocab_size;
  return s.str();
}

std::string bert_size_text(const BertConfig& c) {
  std::ostringstream s;
  s << "num_hidden_layers " << c.num_hidden_layers << ", hidden_size " << c.hidden_size
    << ", intermediate_size " << c.intermediate_size << ", max_position_embeddings "
    << c.max_position_embeddings << ", vocab_size " << c.vocab_size << ", type_vocab_size "
    << c.type_vocab_size;
  return s.str();
}

std::string llama_size_text(const LlamaConfig& c) {
  std::ostringstream s;
  s << "num_hidden_layers " << c.num_hidden_layers << ", hidden_size " << c.hidden_size
    << ", intermediate_size " << c.intermediate_size << ", num_attention_heads "
    << c.num_attention_heads << ", num_key_value_heads " << c.kv_heads() << ", vocab_size "
    << c.vocab_size;
  return s.str();
}

void check_parameters_fit(const std::string& prefix, double parameters, const std::string& sizes,
                          double copies, const std::string& why) {
  std::optional<AvailableMemory> room = available_memory();
  if (!room) return;
  const double need = parameters * 4 * copies;
  if (need <= static_cast<double>(room->bytes)) return;
  std::string how = copies == 1 ? "as f32" : "as f32 x " + count_text(copies) + " (" + why + ")";
  fail(prefix, " ", sizes, " make ", count_text(parameters), " parameters: ", format_bytes(need),
       " ", how, ", more than the ", format_bytes(d(room->bytes)), " of memory available (",
       room->source, "); lower them in config.json or --config_overrides");
}

std::vector<ConfigTensor> gpt2_config_tensors(const GPT2Config& c) {
  const int64_t e = c.n_embd;
  const int64_t i = c.n_inner.value_or(4 * e);
  return {{"wte.weight", {c.vocab_size, e}, "vocab_size, n_embd"},
          {"wpe.weight", {c.n_positions, e}, "n_positions, n_embd"},
          {"h.0.attn.c_attn.weight", {e, 3 * e}, "n_embd"},
          {"h.0.mlp.c_fc.weight", {e, i}, "n_embd, n_inner"}};
}

std::vector<ConfigTensor> bert_config_tensors(const BertConfig& c) {
  const int64_t h = c.hidden_size;
  return {{"embeddings.word_embeddings.weight", {c.vocab_size, h}, "vocab_size, hidden_size"},
          {"embeddings.position_embeddings.weight",
           {c.max_position_embeddings, h},
           "max_position_embeddings, hidden_size"},
          {"embeddings.token_type_embeddings.weight",
           {c.type_vocab_size, h},
           "type_vocab_size, hidden_size"},
          {"encoder.layer.0.attention.self.query.weight", {h, h}, "hidden_size"},
          {"encoder.layer.0.intermediate.dense.weight",
           {c.intermediate_size, h},
           "intermediate_size, hidden_size"}};
}

std::vector<ConfigTensor> llama_config_tensors(const LlamaConfig& c) {
  const int64_t h = c.hidden_size, dim = c.head_size();
  return {{"embed_tokens.weight", {c.vocab_size, h}, "vocab_size, hidden_size"},
          {"layers.0.self_attn.q_proj.weight",
           {c.num_attention_heads * dim, h},
           "num_attention_heads, head_dim, hidden_size"},
          {"layers.0.self_attn.k_proj.weight",
           {c.kv_heads() * dim, h},
           "num_key_value_heads, head_dim, hidden_size"},
          {"layers.0.mlp.gate_proj.weight",
           {c.intermediate_size, h},
           "intermediate_size, hidden_size"}};
}

}  // namespace loom::models
