// oneDNN-backed GEMM (gemm.h). One dnnl::matmul primitive per distinct
// (shape, dtype, thread count), created once and kept in a process-wide
// cache: creating a primitive costs far more than a small product, so a
// training step that repeats its shapes pays creation only on the first step.
// Transposes are strides in the memory descriptors (oneDNN picks its packed
// GEMM for any of the four layouts); a broadcast operand has batch dim 1.
#include "backends/cpu/gemm.h"

#include <dnnl.hpp>

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cpu/convert.h"
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
  auto e = lookup(s, DType::f32);
  if (e->native)
    execute(*e, a, b, c);
  else
    gemm_each(s, DType::f32, a, b, c);
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

bool sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  return dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta,
                    c, ldc) == dnnl_success;
}

}  // namespace loom::backends::cpu
