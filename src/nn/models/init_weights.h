// Shared helpers of the model classes: transformers' standard weight
// initialization (PreTrainedModel._init_weights: Linear/Conv1D/Embedding
// weights normal(0, std), the Embedding padding row and biases zero,
// LayerNorm weight 1 / bias 0), key-mask construction and input checks.
#pragma once

#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "loom/nn.h"

namespace loom::models {

using Select = std::function<bool(const std::string&)>;

/// Initializes every Linear, Conv1D, Embedding and LayerNorm under `root`
/// whose parameter names `select` accepts, once per tensor (ties are
/// initialized through their first name). Records the tensors it touched in
/// `done` (tensor identity).
void init_standard_weights(nn::Module& root, double std, const Select& select,
                           std::unordered_set<const void*>& done);

/// [B,T] attention mask (1/true = token) -> bool key mask [B,1,1,T], or an
/// undefined tensor when `mask` is undefined. Throws loom::Error "[<model>]
/// attention_mask ..." when its shape is not [B,T].
Tensor key_padding_mask(const Tensor& mask, int64_t batch, int64_t seq, const char* model);

/// Packed sequences (padding-free batches, docs/sft.md): position_ids [B,T]
/// or [1,T] that restart at 0 at every sequence -> bool mask [B,1,T,T], true
/// where query i may see key j: j >= i - position_ids[i], the start of i's
/// sequence (with the causal mask, only its own sequence). For 0-based
/// per-sequence positions this is transformers' find_packed_sequence_indices
/// (masking_utils.py: a boundary wherever a position is not the previous + 1);
/// positions 0, 1, 2, ... give an all-true mask. Undefined when position_ids is.
Tensor packed_sequence_mask(const Tensor& position_ids, int64_t seq);

/// Checks input_ids is a defined [B,T] integer tensor; throws loom::Error "[<model>] ...".
void check_input_ids(const Tensor& ids, const char* model);
/// Checks an optional [B,T] id tensor (token types, positions may be [1,T]).
void check_ids_like(const Tensor& t, const Tensor& ids, const char* name, const char* model,
                    bool allow_batch_one);

/// True when `key` matches one of `patterns` at '.' boundaries (a whole
/// component run: "attn.bias" matches "h.0.attn.bias", not "h.0.attn.c_attn.bias").
bool matches_any(const std::string& key, const std::vector<std::string>& patterns);

}  // namespace loom::models
