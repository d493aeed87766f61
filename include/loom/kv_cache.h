// loom::StaticCache — a key/value cache of fixed size for autoregressive
// decoding (transformers' StaticCache, cache_utils.py). Every layer owns a
// key and a value buffer [B, n_head, max_cache_len, head_dim] allocated once;
// a forward pass over S new tokens writes their keys/values at the rows
// named by `cache_position` [S] (i64, a tensor, never a constant) and attends
// over all max_cache_len rows with a mask that hides rows after each query.
// Because the buffers never change shape and the positions are graph inputs,
// every decode step traces the same graph: the lazy device compiles the
// prompt pass once and the one-token step once (docs/generation.md).
//
//   loom::StaticCache cache(cfg.n_layer, /*batch=*/1, cfg.n_head, /*max_cache_len=*/64,
//                           cfg.n_embd / cfg.n_head, loom::DType::f32, dev);
//   loom::Tensor pos = loom::arange(5).to(dev);                // [5] rows 0..4
//   loom::Tensor logits = model->forward_with_cache(ids, pos, cache);  // [1,5,V]
//
// Assumes rows are written in increasing order (a row written again is
// overwritten, as transformers' index_copy_); the position values are
// checked when the write runs (index_copy throws loom::Error for a row
// outside [0, max_cache_len); lazy:xla drops such a write instead).
#pragma once

#include <cstdint>
#include <vector>

#include "loom/ops.h"
#include "loom/tensor.h"

namespace loom {

class StaticCache {
 public:
  /// Allocates zeroed key and value buffers [batch, num_heads, max_cache_len,
  /// head_dim] of `dtype` on `device` for each of `num_layers` layers. Throws
  /// loom::Error "[StaticCache] ..." when a size is < 1.
  StaticCache(int64_t num_layers, int64_t batch, int64_t num_heads, int64_t max_cache_len,
              int64_t head_dim, DType dtype, const Device& device);

  /// Writes key/value [B, n_head, S, head_dim] of `layer` at the rows
  /// `cache_position` [S] (i64) — rows it names are replaced, the others kept
  /// — and returns the whole updated {key, value}, each [B, n_head,
  /// max_cache_len, head_dim] (transformers' StaticCache.update). Throws
  /// loom::Error "[StaticCache] ..." for a layer out of range or shapes that
  /// do not match the buffers.
  std::pair<Tensor, Tensor> update(int64_t layer, const Tensor& key, const Tensor& value,
                                   const Tensor& cache_position);

  /// The attention mask of queries at `cache_position` [S] over the cache
  /// rows: bool [1, 1, S, max_cache_len], true where row j <= position i
  /// (causal, and hiding the rows not yet written).
  Tensor attention_mask(const Tensor& cache_position) const;

  /// Zeros every buffer (a new sequence).
  void reset();

  int64_t num_layers() const { return static_cast<int64_t>(keys_.size()); }
  int64_t max_cache_len() const { return max_cache_len_; }
  int64_t batch_size() const { return batch_; }
  const Tensor& key(int64_t layer) const { return keys_.at(static_cast<size_t>(layer)); }
  const Tensor& value(int64_t layer) const { return values_.at(static_cast<size_t>(layer)); }

 private:
  int64_t batch_, num_heads_, max_cache_len_, head_dim_;
  DType dtype_;
  Device device_;
  std::vector<Tensor> keys_, values_;
};

}  // namespace loom
