// Optimized cross_entropy_backward and fused_linear_cross_entropy (formulas
// in backends/reference/cross_entropy_grad.cpp).
//
// fused_linear_cross_entropy never materializes the [N, C] logits: rows are
// taken in chunks of R (R x C floats of scratch, reused across calls); per
// chunk, three f32 GEMMs through oneDNN's sgemm:
//   Z = H[r] W^T (R x C), Z <- d logits in place (softmax - smoothed one-hot,
//   scaled), dH[r] = Z W, dW += Z^T H[r].
// That is the fused linear cross-entropy of Liger-Kernel (Hsu et al. 2024,
// "Liger Kernel: Efficient Triton Kernels for LLM Training", sec. 3.3) —
// gradients computed in the forward pass, chunk by chunk — with the same
// aim as "Cut Your Losses in Large-Vocabulary Language Models" (Wijmans et
// al. 2024): no [tokens, vocab] buffer. Same GEMM count as the unfused
// program (logits, d input, d weight). bf16 operands (autocast) run bf16
// GEMMs with f32 accumulation and f32 results (AMX where the CPU has it), on
// the chunk's logits transposed ([C, R]) where oneDNN has AMX, by rows
// elsewhere (see fused_bf16). The per-row math is the cpu cross_entropy
// kernel's: f32 values, double accumulators, the loss summed in row order
// (the bf16 transposed path: the same formulas by columns).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "backends/cpu/convert.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/gemm_bf16_f32.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/vec_math.h"
#include "core/parallel.h"
#include "core/settings.h"
#include "loom/error.h"

namespace loom::backends::cpu {
namespace {

// Scratch floats for one chunk of logits (at most 64 MiB); at least kMinChunkRows rows.
constexpr int64_t kChunkFloats = int64_t{16} << 20;
constexpr int64_t kMinChunkRows = 16;

// Rows per chunk for n rows of `classes` logits: at most kChunkFloats of
// scratch (never below kMinChunkRows rows), the rows split evenly over the
// fewest chunks that fit, so no chunk is a small remainder. Each chunk's
// logits and dH GEMMs stream the whole [C, D] weight (oneDNN packs it per
// call) and its dW GEMM reads and writes the whole [C, D] gradient, so the
// chunk count sets that traffic: for the demo head (N 1024, C 50257, D 256,
// 2 threads) 7 chunks of <= 166 rows took 430 ms, 4 of 256 rows 401 ms, 1
// of 1024 rows 379 ms (bench/history/2026-12-milestone3.md, "The fused head's chunk size").
int64_t chunk_rows(int64_t n, int64_t classes) {
  int64_t most = std::max<int64_t>(kChunkFloats / std::max<int64_t>(classes, 1), kMinChunkRows);
  if (n <= most) return std::max<int64_t>(n, 1);
  int64_t chunks = (n + most - 1) / most;
  return (n + chunks - 1) / chunks;
}

struct Targets {
  std::vector<int64_t> t;
  int64_t count = 0;
};

Targets checked_targets(const ConstView& target, int64_t classes, int64_t ignore, const char* op) {
  Targets r{to_i64(target), 0};
  for (int64_t t : r.t) {  // validate before any parallel work
    LOOM_CHECK(t == ignore || (t >= 0 && t < classes), "[", op, "] target ", t,
               " is out of range for ", classes, " classes");
    if (t != ignore) ++r.count;
  }
  return r;
}

// Overwrites row z (C logits) with its gradient times `scale`; returns the
// row's loss. Three passes over the row, in place (max; exp and its sum;
// scale), plus the row sum only with label smoothing.
double row_grad(float* z, int64_t classes, int64_t t, double eps, float scale) {
  float m = vm::max(z, classes);
  float zt = z[t];
  double sum_z = eps != 0 ? vm::sum(z, classes) : 0.0;
  double lse = m + std::log(vm::exp_shift_sum(z, z, classes, m));  // z <- exp(z - m)
  double loss = (1 - eps) * (lse - zt);
  if (eps != 0) loss -= eps / double(classes) * (sum_z - double(classes) * lse);
  float ps = static_cast<float>(std::exp(m - lse)) * scale;  // scale / sum exp(z - m)
  float smooth = static_cast<float>(eps / double(classes)) * scale;
  for (int64_t k = 0; k < classes; ++k) z[k] = z[k] * ps - smooth;
  z[t] -= static_cast<float>(1 - eps) * scale;
  return loss;
}

// Gradient rows [0, rows) of z in place; loss[i] gets each row's loss.
void grad_rows(float* z, int64_t rows, int64_t classes, const int64_t* t, int64_t ignore,
               double eps, float scale, double* loss) {
  int64_t grain = std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, classes));
  parallel_for(rows, grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      float* zr = z + i * classes;
      if (t[i] == ignore) {
        std::fill(zr, zr + classes, 0.0f);
        loss[i] = 0;
      } else {
        loss[i] = row_grad(zr, classes, t[i], eps, scale);
      }
    }
  });
}

// Turns rows [r0, r0 + r) of the logits (z holds r rows) into their gradient.
using FusedRowGrad = std::function<void(float* z, int64_t r0, int64_t r)>;

float* chunk_scratch(int64_t floats) {
  static thread_local std::vector<float> scratch;
  if (static_cast<int64_t>(scratch.size()) < floats) scratch.resize(floats);
  return scratch.data();
}

}  // namespace

void cpu_cross_entropy_backward(const OpCall& call) {
  int64_t n = call.inputs[0].type.shape[0], classes = call.inputs[0].type.shape[1];
  Targets tg =
      checked_targets(call.inputs[1], classes, call.attrs->ignore_index, "cross_entropy_backward");
  std::vector<float> g = to_f32(call.inputs[2]);
  float scale = g[0] / static_cast<float>(std::max<int64_t>(tg.count, 1));
  if (n == 0 || classes == 0) return;
  F32Input in(call.inputs[0]);
  F32Output out(call.output);
  std::memcpy(out.data(), in.data(), sizeof(float) * n * classes);
  std::vector<double> loss(n);
  grad_rows(out.data(), n, classes, tg.t.data(), call.attrs->ignore_index,
            call.attrs->label_smoothing, scale, loss.data());
  out.finish();
}

namespace {

// The chunk loop over f32 operands: three sgemm calls per chunk.
bool fused_f32(const float* h, const float* w, int64_t n, int64_t dim, int64_t classes,
               int64_t rows, const FusedRowGrad& rg, float* dw, float* dh) {
  float* z = chunk_scratch(rows * classes);
  bool ok = true;
  for (int64_t r0 = 0; r0 < n; r0 += rows) {
    int64_t r = std::min(rows, n - r0);
    const float* hr = h + r0 * dim;
    ok = ok && sgemm(false, true, r, classes, dim, 1.0f, hr, dim, w, dim, 0.0f, z, classes);
    rg(z, r0, r);
    ok = ok &&
         sgemm(false, false, r, dim, classes, 1.0f, z, classes, w, dim, 0.0f, dh + r0 * dim, dim);
    ok = ok && sgemm(true, false, classes, dim, r, 1.0f, z, classes, hr, dim, r0 == 0 ? 0.0f : 1.0f,
                     dw, dim);
  }
  return ok;
}

// Columns [0, w) of a transposed chunk: z is [C, w] with row stride ld
// (z[c * ld + j] is class c of the chunk's row j). row_grad's math column by
// column, vectorized across the columns, in two passes over z instead of
// four: classes go in tiles of kTileRows small enough for L1, and each tile's
// max updates a running max m (the sum of exponentials so far is rescaled by
// exp(m_old - m_new), the online softmax of Milakov & Gimelshein 2018,
// "Online normalizer calculation for softmax") before the tile is replaced
// by exp(z - m) and summed in double. The second pass scales each tile by
// exp(m_tile - lse) * scale, subtracts the smoothing and writes the gradient,
// rounded to bf16, into zb at the same places (zb_at = offset of column 0 in
// zb). A column holding a NaN gets NaN loss and gradient (the max skips it,
// the sum does not), an ignored target's column zeros.
constexpr int64_t kColBlock = 128;
constexpr int64_t kTileRows = 32;

struct ColSoftmax {  // per column: running max (NaNs skipped), sum of exp(z - m)
  float m[kColBlock];
  double s[kColBlock], sz[kColBlock];
};

// First pass: z <- exp(z - m_tile) tile by tile; tile_m[k * w + j] = m_tile.
void col_exp_pass(float* z, int64_t w, int64_t ld, int64_t classes, bool smoothing, ColSoftmax& cs,
                  float* tile_m) {
  float tm[kColBlock], buf[kColBlock];
  for (int64_t j = 0; j < w; ++j)
    cs.m[j] = -std::numeric_limits<float>::infinity(), cs.s[j] = 0, cs.sz[j] = 0;
  for (int64_t c0 = 0, k = 0; c0 < classes; c0 += kTileRows, ++k) {
    int64_t c1 = std::min(classes, c0 + kTileRows);
    std::copy(cs.m, cs.m + w, tm);
    for (int64_t c = c0; c < c1; ++c) {
      const float* row = z + c * ld;
#pragma omp simd
      for (int64_t j = 0; j < w; ++j) tm[j] = row[j] > tm[j] ? row[j] : tm[j];
      if (smoothing) {
#pragma omp simd
        for (int64_t j = 0; j < w; ++j) cs.sz[j] += row[j];
      }
    }
    for (int64_t j = 0; j < w; ++j)
      if (tm[j] > cs.m[j]) cs.s[j] *= std::exp(double(cs.m[j]) - double(tm[j])), cs.m[j] = tm[j];
    std::copy(cs.m, cs.m + w, tile_m + k * w);
    for (int64_t c = c0; c < c1; ++c) {
      float* row = z + c * ld;
#pragma omp simd
      for (int64_t j = 0; j < w; ++j)  // -inf so far: exp gives 0, not NaN
        buf[j] = row[j] - (cs.m[j] == -std::numeric_limits<float>::infinity() ? 0.0f : cs.m[j]);
      vm::exp(buf, row, w);
#pragma omp simd
      for (int64_t j = 0; j < w; ++j) cs.s[j] += row[j];
    }
  }
}

void grad_col_block(float* z, uint16_t* zb, int64_t zb_at, int64_t w, int64_t ld, int64_t classes,
                    const int64_t* t, int64_t ignore, double eps, float scale, double* loss) {
  static thread_local std::vector<float> tile_m;
  int64_t tiles = (classes + kTileRows - 1) / kTileRows;
  tile_m.resize(static_cast<size_t>(tiles * w));
  float zt[kColBlock], keep[kColBlock], ps[kColBlock], buf[kColBlock];
  for (int64_t j = 0; j < w; ++j) zt[j] = t[j] == ignore ? 0.0f : z[t[j] * ld + j];
  ColSoftmax cs;
  col_exp_pass(z, w, ld, classes, eps != 0, cs, tile_m.data());
  double lse[kColBlock];
  for (int64_t j = 0; j < w; ++j) {
    keep[j] = t[j] == ignore ? 0.0f : 1.0f;
    lse[j] = cs.m[j] + std::log(cs.s[j]);  // a NaN logit made s NaN
    loss[j] = t[j] == ignore ? 0.0 : (1 - eps) * (lse[j] - zt[j]);
    if (eps != 0 && t[j] != ignore)
      loss[j] -= eps / double(classes) * (cs.sz[j] - double(classes) * lse[j]);
  }
  float smooth = static_cast<float>(eps / double(classes)) * scale;
  for (int64_t c0 = 0, k = 0; c0 < classes; c0 += kTileRows, ++k) {
    const float* tm = tile_m.data() + k * w;
    for (int64_t j = 0; j < w; ++j) ps[j] = static_cast<float>(std::exp(tm[j] - lse[j])) * scale;
    for (int64_t c = c0; c < std::min(classes, c0 + kTileRows); ++c) {
      const float* row = z + c * ld;
#pragma omp simd
      for (int64_t j = 0; j < w; ++j) buf[j] = keep[j] != 0 ? row[j] * ps[j] - smooth : 0.0f;
      store_f32(buf, w, zb, DType::bf16, zb_at + c * ld);
    }
  }
  for (int64_t j = 0; j < w; ++j) {
    if (t[j] == ignore) continue;
    float p = static_cast<float>(std::exp(tile_m[(t[j] / kTileRows) * w + j] - lse[j])) * scale;
    float v = z[t[j] * ld + j] * p - smooth;
    v -= static_cast<float>(1 - eps) * scale;
    store_f32(&v, 1, zb, DType::bf16, zb_at + t[j] * ld + j);
  }
}

// grad_rows for a transposed chunk: z [C, r] f32 logits (the chunk's rows
// are columns) -> zb [C, r] bf16 gradient; loss[j] per row. Blocks of up
// to kColBlock columns in parallel.
void grad_cols(float* z, uint16_t* zb, int64_t r, int64_t classes, const int64_t* t, int64_t ignore,
               double eps, float scale, double* loss) {
  // Blocks of at least 16 columns (a cache line of each class row), narrow
  // enough that every thread gets one.
  int64_t per_thread = (r + get_num_threads() - 1) / get_num_threads();
  int64_t width = std::clamp<int64_t>((per_thread + 15) / 16 * 16, 16, kColBlock);
  int64_t blocks = (r + width - 1) / width;
  parallel_for(blocks, 1, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      int64_t j0 = k * width;
      grad_col_block(z + j0, zb, j0, std::min(width, r - j0), r, classes, t + j0, ignore, eps,
                     scale, loss + j0);
    }
  });
}

// Whether the bf16 chunk loop computes its logits transposed (see
// fused_bf16): where oneDNN runs bf16 on AMX, by default; elsewhere the rows
// layout, which measured faster there (AMD EPYC Zen 4, AVX512-BF16, demo
// bf16 step; bench/RESULTS.md, 2026-12-06). LOOM_FUSED_CE_BF16_LAYOUT=cols
// or =rows forces one (A/B runs and the tests of both paths; read once: core/settings.h;
// unset or empty: the default; any other value throws).
bool bf16_logits_transposed_impl() {
  const std::string& layout = settings::text(Setting::fused_ce_bf16_layout);  // "", cols, rows
  if (!layout.empty()) return layout == "cols";
  static const bool kAmx = gemm_has_amx();
  return kAmx;
}

// The chunk loop over bf16 operands (autocast): bf16 x bf16 GEMMs with f32
// accumulation and f32 results (gemm_bf16_f32.h: logits, d input, d weight
// accumulated across chunks); only the logits' gradient is rounded to bf16,
// as the GEMMs' operand. With AMX the chunk's logits are computed
// transposed, Z^T = W H[r]^T ([C, r]), and stay so: oneDNN's AMX kernels run
// that product about twice as fast as H[r] W^T ([r, C]: one short, very wide
// output), and dW += (dZ^T) H[r] then reads its A operand plain instead of
// strided (Sapphire Rapids, 2 threads, demo head: 22 -> 12 ms and 14 -> 11 ms
// per 256-row chunk; bench/RESULTS.md). Without AMX the logits are rows,
// Z = H[r] W^T, softmaxed by rows as the f32 path does (`rg`). Where oneDNN
// has no bf16 kernel, a product widens its operands to f32 and runs the f32 GEMM.
void fused_bf16(const void* h, const void* w, int64_t n, int64_t dim, int64_t classes, int64_t rows,
                const int64_t* t, int64_t ignore, double eps, float scale, double* loss,
                const FusedRowGrad& rg, float* dw, float* dh) {
  const char* hb = static_cast<const char*>(h);
  float* z = chunk_scratch(rows * classes);
  static thread_local std::vector<uint16_t> zb;  // reused: no fresh pages per call
  static thread_local std::vector<float> fa, fb, fc;  // the no-bf16-kernel path's operands
  zb.resize(std::max<size_t>(zb.size(), rows * classes));
  uint16_t* zbp = zb.data();  // thread_local: take addresses on this thread
  auto to_f32 = [](const void* src, int64_t count, float* dst, bool add) {
    parallel_for(count, kElementGrain, [&](int64_t b, int64_t e) {
      if (!add) return load_f32(src, DType::bf16, b, e - b, dst + b);
      std::vector<float> part(e - b);
      load_f32(src, DType::bf16, b, e - b, part.data());
      for (int64_t i = b; i < e; ++i) dst[i] += part[i - b];
    });
  };
  // c (f32) = op(a) op(b) (+ c): bf16 operands, f32 products and sums. Where
  // oneDNN has no bf16 kernel (AVX2: its bf16 matmul is a reference loop) the
  // operands are widened to f32, which is exact, and the f32 GEMM runs: the
  // native kernel's numbers, never a bf16-rounded product (a bf16 logit of
  // ~40 is off by up to 0.125, which moved the softmax and its gradient:
  // FusedCrossEntropy.Bf16Kernel* on an AMD EPYC without AVX-512).
  auto product = [&](int64_t m, int64_t nn, int64_t k, bool ta, bool tb, const void* a,
                     const void* b, float* c, bool acc) {
    if (gemm_bf16_f32(m, nn, k, ta, tb, a, b, c, acc)) return;
    fa.resize(static_cast<size_t>(m * k));
    fb.resize(static_cast<size_t>(k * nn));
    to_f32(a, m * k, fa.data(), false);
    to_f32(b, k * nn, fb.data(), false);
    float* out = c;
    if (acc) {
      fc.resize(static_cast<size_t>(m * nn));
      out = fc.data();
    }
    gemm({1, m, nn, k, ta, tb}, DType::f32, fa.data(), fb.data(), out);
    if (acc)
      parallel_for(m * nn, kElementGrain, [&](int64_t b0, int64_t e0) {
        for (int64_t i = b0; i < e0; ++i) c[i] += out[i];
      });
  };
  const bool cols = fused_ce_bf16_transposed();
  for (int64_t r0 = 0; r0 < n; r0 += rows) {
    int64_t r = std::min(rows, n - r0);
    const void* hr = hb + r0 * dim * 2;
    if (cols) {
      product(classes, r, dim, false, true, w, hr, z, false);  // Z^T [C, r]
      grad_cols(z, zbp, r, classes, t + r0, ignore, eps, scale, loss + r0);
      product(r, dim, classes, true, false, zbp, w, dh + r0 * dim, false);  // (dZ^T)^T W
      product(classes, dim, r, false, false, zbp, hr, dw, r0 > 0);          // dZ^T H[r]
    } else {
      product(r, classes, dim, false, true, hr, w, z, false);  // Z [r, C]
      rg(z, r0, r);
      parallel_for(r * classes, kElementGrain,
                   [&](int64_t b, int64_t e) { store_f32(z + b, e - b, zbp, DType::bf16, b); });
      product(r, dim, classes, false, false, zbp, w, dh + r0 * dim, false);  // dZ W
      product(classes, dim, r, true, false, zbp, hr, dw, r0 > 0);            // dZ^T H[r]
    }
  }
}

}  // namespace

bool fused_ce_bf16_transposed() { return bf16_logits_transposed_impl(); }

void cpu_fused_linear_cross_entropy(const OpCall& call) {
  int64_t n = call.inputs[0].type.shape[0], dim = call.inputs[0].type.shape[1];
  int64_t classes = call.inputs[1].type.shape[0];
  int64_t ignore = call.attrs->ignore_index;
  double eps = call.attrs->label_smoothing;
  Targets tg = checked_targets(call.inputs[2], classes, ignore, "fused_linear_cross_entropy");
  float scale = call.inputs[3].as<float>()[0] / static_cast<float>(std::max<int64_t>(tg.count, 1));
  float* dw = call.output.as<float>();
  float* dh = dw + classes * dim;
  float* tail = dh + n * dim;  // the loss row
  std::memset(tail, 0, sizeof(float) * dim);
  std::vector<double> loss(n, 0.0);
  int64_t rows = chunk_rows(n, classes);
  FusedRowGrad rg = [&](float* z, int64_t r0, int64_t r) {
    grad_rows(z, r, classes, tg.t.data() + r0, ignore, eps, scale, loss.data() + r0);
  };
  sync_omp_threads();
  bool ok = true;
  if (n == 0)
    std::memset(dw, 0, sizeof(float) * classes * dim);
  else if (call.inputs[0].type.dtype == DType::bf16)
    fused_bf16(call.inputs[0].data, call.inputs[1].data, n, dim, classes, rows, tg.t.data(), ignore,
               eps, scale, loss.data(), rg, dw, dh);
  else
    ok = fused_f32(call.inputs[0].as<float>(), call.inputs[1].as<float>(), n, dim, classes, rows,
                   rg, dw, dh);
  LOOM_CHECK(ok, "[fused_linear_cross_entropy] oneDNN sgemm rejected [", n, ",", dim, "] x [",
             classes, ",", dim, "]");
  double total = 0;
  for (int64_t i = 0; i < n; ++i) total += loss[i];
  tail[0] = tg.count ? static_cast<float>(total / double(tg.count))
                     : std::numeric_limits<float>::quiet_NaN();
}

}  // namespace loom::backends::cpu
