// oneDNN-backed GEMM (gemm.h); f32 products of one row go to gemv.h instead.
// One dnnl::matmul primitive per distinct (shape, dtype, thread count),
// created once and kept in a process-wide cache: creating a primitive costs
// far more than a small product, so a training step that repeats its shapes
// pays creation only on the first step.
// Transposes are strides in the memory descriptors (oneDNN picks its packed
// GEMM for any of the four layouts); a broadcast operand has batch dim 1.
#include "backends/cpu/gemm.h"

#include <dnnl.hpp>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cpu/convert.h"
#include "backends/cpu/gemv.h"
#include "core/parallel.h"
#include "loom/error.h"

namespace loom::backends::cpu {
namespace {

using dnnl::memory;

struct Key {
  GemmShape s;
  DType dtype;
  int threads;
  bool operator==(const Key& o) const {
    return s.batch == o.s.batch && s.m == o.s.m && s.n == o.s.n && s.k == o.s.k &&
           s.trans_a == o.s.trans_a && s.trans_b == o.s.trans_b && s.bcast_a == o.s.bcast_a &&
           s.bcast_b == o.s.bcast_b && dtype == o.dtype && threads == o.threads;
  }
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the fields
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix(k.s.batch), mix(k.s.m), mix(k.s.n), mix(k.s.k);
    mix(k.s.trans_a | k.s.trans_b << 1 | k.s.bcast_a << 2 | k.s.bcast_b << 3);
    mix(static_cast<uint64_t>(k.dtype)), mix(k.threads);
    return h;
  }
};

struct Entry {
  bool native = false;  // false: oneDNN has only its reference kernel here
  dnnl::matmul prim;
  memory::desc a_md, b_md, c_md;
};

const dnnl::engine& engine() {
  static const dnnl::engine kEngine(dnnl::engine::kind::cpu, 0);
  return kEngine;
}

memory::data_type dnnl_type(DType dtype) {
  switch (dtype) {
    case DType::bf16:
      return memory::data_type::bf16;
    case DType::f16:
      return memory::data_type::f16;
    default:
      return memory::data_type::f32;
  }
}

// Descriptor of a batch of rows x cols matrices, stored transposed when `trans`.
memory::desc matrix_desc(int64_t batch, int64_t rows, int64_t cols, bool trans, DType dtype,
                         bool batched) {
  memory::dims row_col_strides = trans ? memory::dims{1, rows} : memory::dims{cols, 1};
  if (!batched) return memory::desc({rows, cols}, dnnl_type(dtype), row_col_strides);
  return memory::desc({batch, rows, cols}, dnnl_type(dtype),
                      {rows * cols, row_col_strides[0], row_col_strides[1]});
}

std::shared_ptr<Entry> create(const Key& key) {
  const GemmShape& s = key.s;
  auto e = std::make_shared<Entry>();
  bool batched = s.batch > 1;
  e->a_md = matrix_desc(s.bcast_a ? 1 : s.batch, s.m, s.k, s.trans_a, key.dtype, batched);
  e->b_md = matrix_desc(s.bcast_b ? 1 : s.batch, s.k, s.n, s.trans_b, key.dtype, batched);
  e->c_md = matrix_desc(s.batch, s.m, s.n, false, key.dtype, batched);
  try {
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(e->a_md, e->b_md, e->c_md), engine());
    std::string impl = pd.impl_info_str();
    e->native = impl.rfind("ref", 0) != 0;  // oneDNN's reference kernel is far too slow
    if (e->native) e->prim = dnnl::matmul(pd);
  } catch (const dnnl::error&) {
    e->native = false;
  }
  return e;
}

constexpr size_t kMaxCached = 2048;  // primitives kept before the cache is reset

std::shared_ptr<Entry> lookup(const GemmShape& s, DType dtype) {
  static std::mutex mutex;
  static std::unordered_map<Key, std::shared_ptr<Entry>, KeyHash> cache;
  Key key{s, dtype, get_num_threads()};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  auto e = create(key);
  if (cache.size() >= kMaxCached) cache.clear();  // e.g. many eval lengths: start over
  cache.emplace(key, e);
  return e;
}

void execute(const Entry& e, const void* a, const void* b, void* c) {
  sync_omp_threads();
  static thread_local dnnl::stream stream(engine());
  memory ma(e.a_md, engine(), const_cast<void*>(a));
  memory mb(e.b_md, engine(), const_cast<void*>(b));
  memory mc(e.c_md, engine(), c);
  e.prim.execute(stream, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
  stream.wait();
}

// Product of batch items one at a time (when oneDNN rejects the batched or
// broadcast form).
void gemm_each(const GemmShape& s, DType dtype, const void* a, const void* b, void* c) {
  GemmShape one = s;
  one.batch = 1;
  one.bcast_a = one.bcast_b = false;
  auto e = lookup(one, dtype);
  LOOM_CHECK(e->native, "[matmul] oneDNN has no kernel for ", dtype_name(dtype), " [", s.m, ",",
             s.k, "]x[", s.k, ",", s.n, "]");
  size_t es = dtype_size(dtype);
  for (int64_t i = 0; i < s.batch; ++i)
    execute(*e, static_cast<const char*>(a) + (s.bcast_a ? 0 : i * s.m * s.k * es),
            static_cast<const char*>(b) + (s.bcast_b ? 0 : i * s.k * s.n * es),
            static_cast<char*>(c) + i * s.m * s.n * es);
}

void gemm_f32(const GemmShape& s, const float* a, const float* b, float* c) {
  // One row (a generation step's linear layers): bandwidth-bound, gemv.h.
  if (gemv_applies(s, DType::f32)) return gemv(a, b, c, s.k, s.n, s.trans_b);
  auto e = lookup(s, DType::f32);
  if (e->native)
    execute(*e, a, b, c);
  else
    gemm_each(s, DType::f32, a, b, c);
}

// --- strided products (gemm_strided) ---

// dims (batch..., rows, cols) with `strides` (batch..., row, col).
memory::desc strided_desc(const std::vector<int64_t>& batch, int64_t rows, int64_t cols,
                          const std::vector<int64_t>& strides, DType dtype) {
  memory::dims dims(batch.begin(), batch.end());
  dims.push_back(rows);
  dims.push_back(cols);
  return memory::desc(dims, dnnl_type(dtype), memory::dims(strides.begin(), strides.end()));
}

std::shared_ptr<Entry> strided_lookup(const GemmStrides& s, DType dtype) {
  static std::mutex mutex;
  static std::map<std::vector<int64_t>, std::shared_ptr<Entry>> cache;
  std::vector<int64_t> key = s.batch;
  for (int64_t v : {s.m, s.n, s.k, int64_t(dtype), int64_t(get_num_threads())}) key.push_back(v);
  for (const auto* st : {&s.a, &s.b, &s.c}) key.insert(key.end(), st->begin(), st->end());
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  auto e = std::make_shared<Entry>();
  try {
    e->a_md = strided_desc(s.batch, s.m, s.k, s.a, dtype);
    e->b_md = strided_desc(s.batch, s.k, s.n, s.b, dtype);
    e->c_md = strided_desc(s.batch, s.m, s.n, s.c, dtype);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(e->a_md, e->b_md, e->c_md), engine());
    e->native = std::string(pd.impl_info_str()).rfind("ref", 0) != 0;
    if (e->native) e->prim = dnnl::matmul(pd);
  } catch (const dnnl::error&) {
    e->native = false;
  }
  if (cache.size() >= kMaxCached) cache.clear();
  cache.emplace(std::move(key), e);
  return e;
}

// Element offset of batch item `i` (row-major over s.batch) in an operand
// with `strides`.
int64_t strided_offset(const GemmStrides& s, const std::vector<int64_t>& strides, int64_t i) {
  int64_t off = 0;
  for (size_t d = s.batch.size(); d-- > 0;) {
    off += (i % s.batch[d]) * strides[d];
    i /= s.batch[d];
  }
  return off;
}

// Copies the rows x cols matrix at `src` (row/col strides rs, cs) to or
// from a dense row-major buffer; `to_dense` picks the direction.
void strided_copy(char* strided, char* dense, int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                  size_t es, bool to_dense) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      char* x = strided + (r * rs + c * cs) * es;
      char* y = dense + (r * cols + c) * es;
      std::memcpy(to_dense ? y : x, to_dense ? x : y, es);
    }
}

// No oneDNN kernel for these strides: gather dense copies, gemm(), scatter.
void strided_dense(const GemmStrides& s, DType dtype, const void* a, const void* b, void* c) {
  int64_t nb = 1;
  for (int64_t d : s.batch) nb *= d;
  size_t es = dtype_size(dtype), r = s.batch.size();
  std::vector<char> da(nb * s.m * s.k * es), db(nb * s.k * s.n * es), dc(nb * s.m * s.n * es);
  auto at = [&](const void* p, const std::vector<int64_t>& st, int64_t i) {
    return const_cast<char*>(static_cast<const char*>(p)) + strided_offset(s, st, i) * es;
  };
  for (int64_t i = 0; i < nb; ++i) {
    strided_copy(at(a, s.a, i), da.data() + i * s.m * s.k * es, s.m, s.k, s.a[r], s.a[r + 1], es,
                 true);
    strided_copy(at(b, s.b, i), db.data() + i * s.k * s.n * es, s.k, s.n, s.b[r], s.b[r + 1], es,
                 true);
  }
  gemm({nb, s.m, s.n, s.k}, dtype, da.data(), db.data(), dc.data());
  for (int64_t i = 0; i < nb; ++i)
    strided_copy(at(c, s.c, i), dc.data() + i * s.m * s.n * es, s.m, s.n, s.c[r], s.c[r + 1], es,
                 false);
}

// One oneDNN 2-D product per batch item (when the batched strides are
// rejected but each matrix's are not, e.g. a broadcast batch dim).
bool strided_each(const GemmStrides& s, DType dtype, const void* a, const void* b, void* c) {
  size_t r = s.batch.size();
  GemmStrides one{
      {}, s.m, s.n, s.k, {s.a[r], s.a[r + 1]}, {s.b[r], s.b[r + 1]}, {s.c[r], s.c[r + 1]}};
  auto e = strided_lookup(one, dtype);
  if (!e->native) return false;
  int64_t nb = 1;
  for (int64_t d : s.batch) nb *= d;
  size_t es = dtype_size(dtype);
  for (int64_t i = 0; i < nb; ++i)
    execute(*e, static_cast<const char*>(a) + strided_offset(s, s.a, i) * es,
            static_cast<const char*>(b) + strided_offset(s, s.b, i) * es,
            static_cast<char*>(c) + strided_offset(s, s.c, i) * es);
  return true;
}

}  // namespace

bool gemm_native(DType dtype) {
  if (dtype == DType::f32) return true;
  GemmShape probe{1, 64, 64, 64};
  return lookup(probe, dtype)->native;
}

bool gemm_hardware_native(DType dtype) {
  if (dtype == DType::f32) return true;
  if (dtype != DType::bf16) return false;
  // cpu_isa values are bit sets: avx512_core_amx contains avx512_core_bf16's bits.
  auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (isa & bf16) == bf16 && gemm_native(DType::bf16);
}

bool gemm_has_amx() {
  auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  auto amx = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_amx);
  return (isa & amx) == amx;
}

void gemm(const GemmShape& s, DType dtype, const void* a, const void* b, void* c) {
  if (dtype == DType::f32)
    return gemm_f32(s, static_cast<const float*>(a), static_cast<const float*>(b),
                    static_cast<float*>(c));
  auto e = lookup(s, dtype);
  if (e->native) return execute(*e, a, b, c);
  // No native kernel: f32 round trip.
  int64_t na = (s.bcast_a ? 1 : s.batch) * s.m * s.k, nb = (s.bcast_b ? 1 : s.batch) * s.k * s.n;
  int64_t nc = s.batch * s.m * s.n;
  std::vector<float> fa(na), fb(nb), fc(nc);
  parallel_for(na, 1 << 15,
               [&](int64_t i, int64_t j) { load_f32(a, dtype, i, j - i, fa.data() + i); });
  parallel_for(nb, 1 << 15,
               [&](int64_t i, int64_t j) { load_f32(b, dtype, i, j - i, fb.data() + i); });
  gemm_f32(s, fa.data(), fb.data(), fc.data());
  parallel_for(nc, 1 << 15,
               [&](int64_t i, int64_t j) { store_f32(fc.data() + i, j - i, c, dtype, i); });
}

void gemm_strided(const GemmStrides& s, DType dtype, const void* a, const void* b, void* c) {
  bool broadcast = false;
  for (size_t d = 0; d < s.batch.size(); ++d)
    broadcast = broadcast || (s.batch[d] > 1 && (s.a[d] == 0 || s.b[d] == 0));
  if (!broadcast) {
    auto e = strided_lookup(s, dtype);
    if (e->native) return execute(*e, a, b, c);
  }
  if (strided_each(s, dtype, a, b, c)) return;
  strided_dense(s, dtype, a, b, c);
}

bool sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  return dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta,
                    c, ldc) == dnnl_success;
}

}  // namespace loom::backends::cpu
