// Dtype conversion for the cpu kernels, which compute floating dtypes in f32
// and integer dtypes in int64: load a run of elements of any dtype into a
// float/int64 array, store it back converted. Conversions are exactly the
// ones of loom/dtype.h (bf16/f16 round to nearest even, NaN stays NaN,
// non-finite floats become integer 0, bool = value != 0), vectorized.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/kernel_backend.h"

namespace loom::backends::cpu {

/// dst[i] = float(src[offset + i]) for i < n, src of dtype `dtype`.
void load_f32(const void* src, DType dtype, int64_t offset, int64_t n, float* dst);
/// dst[offset + i] = src[i] converted to `dtype`.
void store_f32(const float* src, int64_t n, void* dst, DType dtype, int64_t offset);
/// Same for int64 (from/to every dtype; floats truncate toward zero).
void load_i64(const void* src, DType dtype, int64_t offset, int64_t n, int64_t* dst);
void store_i64(const int64_t* src, int64_t n, void* dst, DType dtype, int64_t offset);

/// A whole operand as contiguous f32: points at the operand's own data when
/// it is f32, else at a converted copy (converted in parallel).
class F32Input {
 public:
  explicit F32Input(const ConstView& v);
  const float* data() const { return data_; }

 private:
  std::vector<float> copy_;
  const float* data_;
};

/// The output as contiguous f32: writes go to the output buffer itself when
/// it is f32, else to a scratch array that finish() converts into it.
class F32Output {
 public:
  explicit F32Output(const MutView& v);
  float* data() { return data_; }
  /// Converts the scratch array into the output (no-op for f32 outputs).
  void finish();

 private:
  MutView out_;
  std::vector<float> copy_;
  float* data_;
};

/// Converts all of `in` to f32 / int64 in parallel.
std::vector<float> to_f32(const ConstView& in);
std::vector<int64_t> to_i64(const ConstView& in);

}  // namespace loom::backends::cpu
