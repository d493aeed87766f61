// The Trainer's sharded data parallel options: --fsdp and --fsdp_config, as
// transformers' TrainingArguments.fsdp / fsdp_config spell them
// (transformers/trainer_utils.py FSDPOption; training_args.py fsdp_config),
// with loom's answers to the values it does not implement. Assumes the unit
// of sharding is a decoder layer (one entry of the model's layer list).
#pragma once

#include <string>
#include <vector>

namespace loom::train {

/// off: plain DDP (gradients all-reduced). shard_grad_op: ZeRO-2 (gradients
/// reduce-scattered, AdamW state and master weights sharded, updated shards
/// all-gathered into the parameters). full_shard: ZeRO-3 (the parameters
/// are also sharded at rest and gathered per unit inside each step).
enum class FsdpMode { off, shard_grad_op, full_shard };

/// "off", "shard_grad_op", "full_shard".
const char* fsdp_mode_name(FsdpMode mode);

/// Parses --fsdp: HF's space-separated options. "" and "no_shard" are off
/// (DDP); "auto_wrap" may accompany a mode (loom always wraps by layer).
/// Throws loom::Error "[TrainingArguments] fsdp: ..." naming a refused value
/// and what loom has instead: hybrid_shard / hybrid_shard_zero2 (every rank
/// is one shard group here), offload (not implemented), an unknown word, or
/// two modes at once.
FsdpMode parse_fsdp_mode(const std::string& value);

/// The layer class name of a registered architecture, as its model's config
/// declares it (layer_class_of_architecture: "GPT2LMHeadModel" ->
/// "GPT2Block", "Qwen2ForCausalLM" -> "Qwen2DecoderLayer"); "" when unknown.
std::string fsdp_layer_class(const std::string& architecture);

/// Reads --fsdp_config (a JSON object as text, or a path to a file holding
/// one) and returns the classes of transformer_layer_cls_to_wrap (a string
/// or a list; HF's "fsdp_" key prefix is accepted). Empty text: {}. Throws
/// loom::Error "[TrainingArguments] fsdp_config: ..." for malformed JSON, a
/// key loom does not read (named, with what loom does instead), or a class
/// that is not `layer_class` (the model's; loom wraps each decoder layer).
std::vector<std::string> parse_fsdp_config(const std::string& value,
                                           const std::string& layer_class);
/// parse_fsdp_config without the model: the JSON (or the file: missing,
/// unreadable or malformed), its keys and their types. TrainingArguments::
/// validate() calls it, also without --fsdp (transformers parses
/// fsdp_config in __post_init__ and raises), before data or model load.
std::vector<std::string> check_fsdp_config(const std::string& value);

/// Bytes one rank holds for the model's state in a mode (f32, 4 bytes per
/// element): `trainable` and `frozen` parameter counts, `world` ranks, and
/// the optimizer's state per trainable element (AdamW 2, SGD 0, or 1 with
/// momentum). DDP / one process: every rank holds all of it. shard_grad_op:
/// whole parameters plus their shard, whole gradients in backward plus
/// their shard, the optimizer state of the shard. full_shard (lazy device):
/// the shards of the parameters (`params_at_rest`), of their gradients and
/// of the optimizer state, and the whole parameters at their peak (a save,
/// an evaluation: materialize_params); inside a step the units gathered and
/// their whole gradients until each reduce_scatter are transients in the
/// step's arena with the activations (a few units at a time: compiler
/// gather_schedule, kReduceScattersInFlight). Off the lazy device full_shard
/// keeps the parameters whole: count it as shard_grad_op.
struct FsdpMemory {
  double params = 0, params_at_rest = 0, grads = 0, optimizer = 0;
  double total() const { return params + grads + optimizer; }
};
FsdpMemory fsdp_memory_per_rank(FsdpMode mode, int64_t world, double trainable, double frozen,
                                double optimizer_copies);

}  // namespace loom::train
