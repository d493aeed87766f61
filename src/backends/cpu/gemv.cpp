// Matrix-vector products (gemv.h). Two loops, one per weight layout, each
// reading the weight once, front to back, in long contiguous runs:
//   - B stored n x k (trans_b: nn.Linear, the tied LM head): y[j] is the dot
//     product of x with row j of B; threads take contiguous ranges of rows.
//   - B stored k x n (GPT-2's Conv1D): y = sum over p of x[p] · row p of B.
//     Splitting the columns between threads would have each one read short
//     pieces of every row; instead the rows are cut into chunks of
//     kGemvChunkRows, each chunk summed into its own partial vector (threads
//     take contiguous ranges of chunks, so each reads one contiguous block
//     of B), then the partials are added in chunk order. Columns go in
//     blocks of kColumnBlock so a chunk's partial block stays in L1 while
//     its rows stream past.
// The partial vectors live in a per-thread scratch vector kept between calls
// (a [k/128, n] block: 74 KiB for GPT-2's MLP), so a generation step
// allocates nothing here.
#include "backends/cpu/gemv.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "core/parallel.h"

namespace loom::backends::cpu {
namespace {

constexpr int64_t kColumnBlock = 4096;  // 16 KiB of partial sums per chunk and block

// Threads for a weight of `bytes` split into `tasks` pieces.
int gemv_threads(int64_t bytes, int64_t tasks) {
  if (bytes < kGemvParallelBytes || omp_in_parallel()) return 1;
  return static_cast<int>(std::min<int64_t>(get_num_threads(), tasks));
}

// y[r] = x · B[r, :] for rows r in [r0, r1) of B [n, k].
void dot_rows(const float* x, const float* b, float* y, int64_t k, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* row = b + r * k;
    float s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t p = 0; p < k; ++p) s += x[p] * row[p];
    y[r] = s;
  }
}

// partial[c, :] = sum over rows p of chunk c (in order) of x[p] · B[p, :],
// for chunks c in [c0, c1) of B [k, n].
// Only columns [lo, hi) when given (a thread's share when there are fewer
// chunks than threads); each column's sum order is the same either way.
void chunk_sums(const float* x, const float* b, float* partial, int64_t k, int64_t n, int64_t c0,
                int64_t c1, int64_t lo = 0, int64_t hi = -1) {
  if (hi < 0) hi = n;
  for (int64_t c = c0; c < c1; ++c) {
    int64_t p0 = c * kGemvChunkRows, p1 = std::min(k, p0 + kGemvChunkRows);
    float* acc = partial + c * n;
    for (int64_t j0 = lo; j0 < hi; j0 += kColumnBlock) {
      int64_t w = std::min(kColumnBlock, hi - j0);
      float* __restrict a = acc + j0;
      const float* __restrict first = b + p0 * n + j0;
      const float x0 = x[p0];
#pragma omp simd
      for (int64_t j = 0; j < w; ++j) a[j] = x0 * first[j];
      for (int64_t p = p0 + 1; p < p1; ++p) {
        const float* __restrict row = b + p * n + j0;
        const float xp = x[p];
#pragma omp simd
        for (int64_t j = 0; j < w; ++j) a[j] += xp * row[j];
      }
    }
  }
}

// y[j] = partial[0, j] + partial[1, j] + ... (chunk order) for j in [j0, j1).
void add_chunks(const float* partial, float* y, int64_t chunks, int64_t n, int64_t j0, int64_t j1) {
  for (int64_t j = j0; j < j1; ++j) y[j] = partial[j];
  for (int64_t c = 1; c < chunks; ++c) {
    const float* __restrict src = partial + c * n;
#pragma omp simd
    for (int64_t j = j0; j < j1; ++j) y[j] += src[j];
  }
}

void gemv_rows(const float* x, const float* b, float* y, int64_t k, int64_t n) {
  int threads = gemv_threads(k * n * int64_t(sizeof(float)), n);
  if (threads <= 1) return dot_rows(x, b, y, k, 0, n);
#pragma omp parallel num_threads(threads)
  {
    int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    dot_rows(x, b, y, k, n * t / nt, n * (t + 1) / nt);
  }
}

void gemv_columns(const float* x, const float* b, float* y, int64_t k, int64_t n) {
  int64_t chunks = (k + kGemvChunkRows - 1) / kGemvChunkRows;
  const int64_t bytes = k * n * int64_t(sizeof(float));
  if (chunks < gemv_threads(bytes, n)) {
    // Fewer chunks than threads (k small, n wide: [1, 128] x [128, 50257]):
    // split the columns instead; every column sums its chunks in order.
    static thread_local std::vector<float> wide;
    if (wide.size() < static_cast<size_t>(chunks * n)) wide.resize(chunks * n);
    float* partial = chunks == 1 ? y : wide.data();
#pragma omp parallel num_threads(gemv_threads(bytes, n))
    {
      int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
      int64_t lo = n * t / nt, hi = n * (t + 1) / nt;
      chunk_sums(x, b, partial, k, n, 0, chunks, lo, hi);
      if (chunks > 1) add_chunks(partial, y, chunks, n, lo, hi);
    }
    return;
  }
  if (chunks == 1) return chunk_sums(x, b, y, k, n, 0, 1);  // y is the only partial
  static thread_local std::vector<float> scratch;
  if (scratch.size() < static_cast<size_t>(chunks * n)) scratch.resize(chunks * n);
  float* partial = scratch.data();
  int threads = gemv_threads(bytes, chunks);
  if (threads <= 1) {
    chunk_sums(x, b, partial, k, n, 0, chunks);
    return add_chunks(partial, y, chunks, n, 0, n);
  }
#pragma omp parallel num_threads(threads)
  {
    int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    chunk_sums(x, b, partial, k, n, chunks * t / nt, chunks * (t + 1) / nt);
#pragma omp barrier
    add_chunks(partial, y, chunks, n, n * t / nt, n * (t + 1) / nt);
  }
}

}  // namespace

bool gemv_applies(const GemmShape& s, DType dtype) {
  return dtype == DType::f32 && s.batch == 1 && s.m == 1 && s.k >= 1 && s.n >= 1;
}

void gemv(const float* x, const float* b, float* y, int64_t k, int64_t n, bool trans_b) {
  if (trans_b) return gemv_rows(x, b, y, k, n);
  gemv_columns(x, b, y, k, n);
}

}  // namespace loom::backends::cpu
