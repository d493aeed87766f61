// Sharded evaluation helpers (see eval_shard.h). Tensors here are host
// (cpu) tensors that the evaluation loop already concatenated.
#include "train/eval_shard.h"

#include <cstring>

#include "loom/error.h"
#include "loom/ops.h"

namespace loom::train {

EvalShardSampler::EvalShardSampler(int64_t n, int64_t rank, int64_t world)
    : n_(n), rank_(rank), world_(world) {
  LOOM_CHECK(n >= 0, "[ddp] eval dataset size must be >= 0, got ", n);
  LOOM_CHECK(world >= 1 && rank >= 0 && rank < world, "[ddp] rank ", rank, " outside [0, ", world,
             ")");
  size_ = rank >= n ? 0 : (n - rank + world - 1) / world;
}

std::vector<int64_t> EvalShardSampler::indices(int64_t) const {
  std::vector<int64_t> out;
  for (int64_t i = rank_; i < n_; i += world_) out.push_back(i);
  return out;
}

namespace {

// Header of host_tensor_bytes: dtype, rank, dims (int64 each), then the data.
void eval_shard_put(std::string& s, int64_t v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}

int64_t eval_shard_get(const std::string& s, size_t& at) {
  LOOM_CHECK(at + sizeof(int64_t) <= s.size(), "[ddp] gathered tensor bytes are truncated");
  int64_t v;
  std::memcpy(&v, s.data() + at, sizeof v);
  at += sizeof v;
  return v;
}

}  // namespace

std::string host_tensor_bytes(const Tensor& t) {
  std::string s;
  if (!t.defined()) {
    eval_shard_put(s, -1);
    return s;
  }
  Tensor h = t.to(Device("cpu"));
  if (h.dtype() != DType::f32 && h.dtype() != DType::i64) h = h.to(DType::f32);
  eval_shard_put(s, static_cast<int64_t>(h.dtype()));
  eval_shard_put(s, h.dim());
  for (int64_t d : h.shape()) eval_shard_put(s, d);
  if (h.dtype() == DType::f32) {
    std::vector<float> v = h.to_vector<float>();
    s.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  } else {
    std::vector<int64_t> v = h.to_vector<int64_t>();
    s.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t));
  }
  return s;
}

Tensor host_tensor_from_bytes(const std::string& bytes) {
  size_t at = 0;
  const int64_t code = eval_shard_get(bytes, at);
  if (code < 0) return Tensor();
  const auto dt = static_cast<DType>(code);
  LOOM_CHECK(dt == DType::f32 || dt == DType::i64, "[ddp] gathered tensor has dtype code ", code);
  const int64_t rank = eval_shard_get(bytes, at);
  LOOM_CHECK(rank >= 0 && rank <= 8, "[ddp] gathered tensor has rank ", rank);
  Shape shape;
  for (int64_t d = 0; d < rank; ++d) shape.push_back(eval_shard_get(bytes, at));
  const size_t need = static_cast<size_t>(numel(shape)) * dtype_size(dt);
  LOOM_CHECK(bytes.size() - at == need, "[ddp] gathered tensor of shape ", to_string(shape),
             " has ", bytes.size() - at, " data bytes, expected ", need);
  return from_blob(bytes.data() + at, shape, dt);
}

namespace {

template <typename T>
Tensor eval_shard_interleave(const std::vector<Tensor>& parts, const Tensor& first) {
  const Shape& s0 = first.shape();
  Shape out_shape = s0;
  out_shape[0] = 0;
  std::vector<std::vector<T>> data(parts.size());
  for (size_t r = 0; r < parts.size(); ++r) {
    if (!parts[r].defined()) continue;
    const Shape& s = parts[r].shape();
    LOOM_CHECK(s.size() == s0.size() && parts[r].dtype() == first.dtype(), "[ddp] rank ", r,
               " gathered ", to_string(s), ", rank 0 ", to_string(s0));
    for (size_t d = 2; d < s.size(); ++d)
      LOOM_CHECK(s[d] == s0[d], "[ddp] rank ", r, " gathered ", to_string(s), ", rank 0 ",
                 to_string(s0));
    out_shape[0] += s[0];
    if (s.size() >= 2) out_shape[1] = std::max(out_shape[1], s[1]);
    data[r] = parts[r].to_vector<T>();
  }
  const int64_t inner = s0.size() >= 3 ? numel(Shape(s0.begin() + 2, s0.end())) : 1;
  const int64_t row = s0.size() >= 2 ? out_shape[1] * inner : 1;
  std::vector<T> out(static_cast<size_t>(numel(out_shape)), static_cast<T>(-100));
  const auto world = static_cast<int64_t>(parts.size());
  for (int64_t i = 0; i < out_shape[0]; ++i) {
    const size_t r = static_cast<size_t>(i % world);
    const int64_t k = i / world;
    LOOM_CHECK(parts[r].defined() && k < parts[r].shape()[0], "[ddp] rank ", r,
               " gathered too few rows for a strided shard");
    const int64_t len = s0.size() >= 2 ? parts[r].shape()[1] * inner : 1;
    std::memcpy(&out[static_cast<size_t>(i * row)], &data[r][static_cast<size_t>(k * len)],
                sizeof(T) * static_cast<size_t>(len));
  }
  return from_blob(out.data(), out_shape, first.dtype());
}

}  // namespace

Tensor interleave_shards(const std::vector<Tensor>& parts) {
  const Tensor* first = nullptr;
  for (const Tensor& p : parts)
    if (p.defined()) {
      first = &p;
      break;
    }
  if (!first) return Tensor();
  if (first->dtype() == DType::i64) return eval_shard_interleave<int64_t>(parts, *first);
  return eval_shard_interleave<float>(parts, *first);
}

}  // namespace loom::train
