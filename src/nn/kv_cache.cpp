// loom::StaticCache (loom/kv_cache.h): fixed-size key/value buffers written
// with index_copy() at the rows cache_position names (transformers'
// StaticCache.update uses index_copy_), so the write position is data (a
// graph input), never a constant, and the lazy device sees one graph for
// every decode step. On the lazy device each buffer dies in its write and
// is donated to the new one, so the write touches only the new rows
// (docs/generation.md).
// Assumes cache_position is a 1-D i64/i32 tensor on the cache's device.
#include "loom/kv_cache.h"

#include "loom/error.h"

namespace loom {

namespace {

void check_position(const Tensor& cache_position, const char* what) {
  LOOM_CHECK(cache_position.defined() && cache_position.dim() == 1, "[StaticCache] ", what,
             ": cache_position must be a 1-D tensor [S], got ",
             cache_position.defined() ? to_string(cache_position.shape()) : "undefined");
  LOOM_CHECK(cache_position.dtype() == DType::i64 || cache_position.dtype() == DType::i32,
             "[StaticCache] ", what, ": cache_position must be i64 or i32, got ",
             dtype_name(cache_position.dtype()));
}

}  // namespace

StaticCache::StaticCache(int64_t num_layers, int64_t batch, int64_t num_heads,
                         int64_t max_cache_len, int64_t head_dim, DType dtype, const Device& device)
    : batch_(batch),
      num_heads_(num_heads),
      max_cache_len_(max_cache_len),
      head_dim_(head_dim),
      dtype_(dtype),
      device_(device) {
  LOOM_CHECK(num_layers >= 1 && batch >= 1 && num_heads >= 1 && max_cache_len >= 1 && head_dim >= 1,
             "[StaticCache] sizes must be >= 1, got num_layers ", num_layers, ", batch ", batch,
             ", num_heads ", num_heads, ", max_cache_len ", max_cache_len, ", head_dim ", head_dim);
  keys_.resize(static_cast<size_t>(num_layers));
  values_.resize(static_cast<size_t>(num_layers));
  reset();
}

void StaticCache::reset() {
  Shape shape{batch_, num_heads_, max_cache_len_, head_dim_};
  for (auto* buffers : {&keys_, &values_})
    for (Tensor& t : *buffers) t = zeros(shape, dtype_, device_);
}

std::pair<Tensor, Tensor> StaticCache::update(int64_t layer, const Tensor& key, const Tensor& value,
                                              const Tensor& cache_position) {
  LOOM_CHECK(layer >= 0 && layer < num_layers(), "[StaticCache] layer ", layer,
             " out of range for ", num_layers(), " layers");
  check_position(cache_position, "update");
  int64_t s = cache_position.size(0);
  for (const Tensor* t : {&key, &value})
    LOOM_CHECK(t->defined() && t->dim() == 4 && t->size(0) == batch_ && t->size(1) == num_heads_ &&
                   t->size(2) == s && t->size(3) == head_dim_,
               "[StaticCache] update: key/value must be [", batch_, ", ", num_heads_, ", ", s, ", ",
               head_dim_, "], got ", t->defined() ? to_string(t->shape()) : "undefined");
  // Rows cache_position of [B, H, L, D] := rows [B, H, S, D].
  auto write = [&](Tensor& buffer, const Tensor& rows) {
    buffer = index_copy(buffer, 2, cache_position, cast(rows, dtype_));
  };
  size_t i = static_cast<size_t>(layer);
  write(keys_[i], key);
  write(values_[i], value);
  return {keys_[i], values_[i]};
}

Tensor StaticCache::attention_mask(const Tensor& cache_position) const {
  check_position(cache_position, "attention_mask");
  int64_t s = cache_position.size(0);
  Tensor rows = reshape(arange(max_cache_len_, DType::i64, cache_position.device()),
                        {1, max_cache_len_});                          // [1,L]
  Tensor queries = reshape(cast(cache_position, DType::i64), {s, 1});  // [S,1]
  return reshape(le(rows, queries), {1, 1, s, max_cache_len_});        // [1,1,S,L]
}

}  // namespace loom
