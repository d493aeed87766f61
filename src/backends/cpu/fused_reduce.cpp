// Fused elementwise chain + reduction on the cpu backend: the group's body is
// evaluated chunk by chunk (eval_fused_chunk) and body[reduce.arg] is folded
// into accumulators while the chunk is in L1, so the reduced value never goes
// to memory. The elements are viewed as [outer, size, inner] (reduce_layout
// in src/compiler/lower.cpp):
//  - inner == 1 (last axes): each row is cut into kFusedChunk pieces whose
//    partial results are computed in parallel and combined in order; rows of
//    at most kFusedChunk / 2 are evaluated several to a chunk;
//  - inner > 1: column tiles of up to kFusedChunk are accumulated row by row
//    (vectorized over the columns; when one tile spans every column, several
//    rows are evaluated per chunk); when there are few tiles, the rows are
//    split into a fixed number of ranges combined in order.
// Work splits depend only on shapes, so results do not depend on the thread
// count. Sums accumulate in double as cpu_reduce does (an unsplit column sum
// adds in the same order, so it matches cpu_reduce bitwise); max/min
// propagate NaN. Results are written after all inputs were read, so an
// output may share an input's buffer.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/convert.h"
#include "backends/cpu/fused.h"
#include "backends/cpu/vec_math.h"

namespace loom::backends::cpu {
namespace {

using ops::OpKind;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool is_extreme(OpKind op) { return op == OpKind::k_max || op == OpKind::k_min; }

// a (op) b for max/min with NaN propagation; a + b for sum/mean.
double combine(OpKind op, double a, double b) {
  if (!is_extreme(op)) return a + b;
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  return op == OpKind::k_max ? std::max(a, b) : std::min(a, b);
}

// The reduced value of one chunk of a row.
double chunk_result(OpKind op, const float* x, int64_t n) {
  if (op == OpKind::k_max) return vm::max(x, n);
  if (op == OpKind::k_min) return vm::min(x, n);
  return vm::sum(x, n);
}

// Rounds to f32 first and then to the output dtype, as cpu_reduce does.
void store_results(const FusedCall& call, const std::vector<double>& r) {
  const compiler::FusedReduce& red = call.group->reduce;
  const MutView& out = call.outputs.back();
  bool mean = red.op == OpKind::k_mean;
  std::vector<float> f(r.size());
  for (size_t i = 0; i < r.size(); ++i)
    f[i] = static_cast<float>(mean ? r[i] / double(red.size) : r[i]);
  store_f32(f.data(), static_cast<int64_t>(f.size()), out.data, out.type.dtype, 0);
}

// inner == 1 and rows of at most kFusedChunk / 2: several whole rows per
// chunk (fewer interpreter passes), each reduced as its own piece, so every
// row's result is the one reduce_rows computes for a one-piece row.
void reduce_short_rows(const FusedCall& call, std::vector<double>& result) {
  const compiler::FusedGroup& g = *call.group;
  const compiler::FusedReduce& red = g.reduce;
  int64_t rows = kFusedChunk / red.size;
  int64_t tasks = (red.outer + rows - 1) / rows;
  int64_t slot = (g.num_inputs() + red.arg) * kFusedChunk;
#pragma omp parallel for schedule(static) if (tasks > 4)
  for (int64_t t = 0; t < tasks; ++t) {
    int64_t o0 = t * rows, count = std::min(rows, red.outer - o0);
    const float* x = eval_fused_chunk(call, o0 * red.size, count * red.size) + slot;
    for (int64_t i = 0; i < count; ++i)
      result[o0 + i] = chunk_result(red.op, x + i * red.size, red.size);
  }
}

// inner == 1: every row [o * size, (o + 1) * size) reduces to one value.
void reduce_rows(const FusedCall& call, std::vector<double>& result) {
  const compiler::FusedGroup& g = *call.group;
  const compiler::FusedReduce& red = g.reduce;
  if (red.size <= kFusedChunk / 2) {
    reduce_short_rows(call, result);
    return;
  }
  int64_t per_row = (red.size + kFusedChunk - 1) / kFusedChunk;
  int64_t tasks = red.outer * per_row;
  int64_t slot = (g.num_inputs() + red.arg) * kFusedChunk;
  std::vector<double> part(tasks);
#pragma omp parallel for schedule(static) if (tasks > 4)
  for (int64_t t = 0; t < tasks; ++t) {
    int64_t o = t / per_row, c = t % per_row;
    int64_t n = std::min(kFusedChunk, red.size - c * kFusedChunk);
    const float* x = eval_fused_chunk(call, o * red.size + c * kFusedChunk, n) + slot;
    part[t] = chunk_result(red.op, x, n);
  }
  for (int64_t o = 0; o < red.outer; ++o) {
    double acc = part[o * per_row];
    for (int64_t c = 1; c < per_row; ++c) acc = combine(red.op, acc, part[o * per_row + c]);
    result[o] = acc;
  }
}

// Folds one chunk of w columns into acc (first: acc is uninitialized).
void fold_columns(OpKind op, const float* x, int64_t w, bool first, double* acc) {
  if (first) {
    for (int64_t j = 0; j < w; ++j) acc[j] = x[j];
  } else if (!is_extreme(op)) {
    for (int64_t j = 0; j < w; ++j) acc[j] += x[j];
  } else {
    for (int64_t j = 0; j < w; ++j) acc[j] = combine(op, acc[j], x[j]);
  }
}

// inner > 1: out[o, j] reduces elements (o, r, j) over r.
void reduce_columns(const FusedCall& call, std::vector<double>& result) {
  const compiler::FusedGroup& g = *call.group;
  const compiler::FusedReduce& red = g.reduce;
  int64_t tiles = (red.inner + kFusedChunk - 1) / kFusedChunk;
  int64_t outputs = red.outer * red.inner;
  // Few tiles: split the rows too (a fixed count, so the sum order is fixed).
  int64_t splits = red.outer * tiles >= 8 ? 1 : std::clamp<int64_t>(red.size / 64, 1, 8);
  int64_t rows_per = (red.size + splits - 1) / splits;
  int64_t slot = (g.num_inputs() + red.arg) * kFusedChunk;
  std::vector<double> part(splits * outputs);
  int64_t tasks = splits * red.outer * tiles;
#pragma omp parallel for schedule(static) if (tasks > 1)
  for (int64_t t = 0; t < tasks; ++t) {
    int64_t sp = t / (red.outer * tiles), rest = t % (red.outer * tiles);
    int64_t o = rest / tiles, j0 = (rest % tiles) * kFusedChunk;
    int64_t w = std::min(kFusedChunk, red.inner - j0);
    int64_t r0 = sp * rows_per, r1 = std::min(red.size, r0 + rows_per);
    double* acc = part.data() + sp * outputs + o * red.inner + j0;
    // One tile spanning all columns: several rows per chunk, folded in row order.
    int64_t step = tiles == 1 ? std::max<int64_t>(1, kFusedChunk / red.inner) : 1;
    for (int64_t r = r0; r < r1; r += step) {
      int64_t count = std::min(step, r1 - r);
      const float* x =
          eval_fused_chunk(call, (o * red.size + r) * red.inner + j0, count * w) + slot;
      for (int64_t i = 0; i < count; ++i) fold_columns(red.op, x + i * w, w, r + i == r0, acc);
    }
  }
  // A split past the last row (rows_per * splits > size) holds nothing.
  int64_t used = (red.size + rows_per - 1) / rows_per;
  for (int64_t i = 0; i < outputs; ++i) {
    double acc = part[i];
    for (int64_t sp = 1; sp < used; ++sp) acc = combine(red.op, acc, part[sp * outputs + i]);
    result[i] = acc;
  }
}

}  // namespace

void run_fused_reduce(const FusedCall& call) {
  const compiler::FusedReduce& red = call.group->reduce;
  std::vector<double> result(red.outer * red.inner);
  if (red.inner == 1)
    reduce_rows(call, result);
  else
    reduce_columns(call, result);
  store_results(call, result);
}

}  // namespace loom::backends::cpu
