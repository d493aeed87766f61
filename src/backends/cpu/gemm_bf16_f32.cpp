// gemm_bf16_f32 (gemm_bf16_f32.h): one cached dnnl::matmul primitive per
// (m, n, k, transposes, accumulate, thread count). The accumulate variant
// carries a sum post-op (C = A B + C), oneDNN's way to say beta = 1.
#include "backends/cpu/gemm_bf16_f32.h"

#include <dnnl.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "core/parallel.h"

namespace loom::backends::cpu {
// Named, so that a unity batch with gemm.cpp (its own Key, Entry, engine())
// sees no redefinition.
namespace bf16_f32 {

using dnnl::memory;

using Key = std::tuple<int64_t, int64_t, int64_t, int, int>;  // m, n, k, flags, threads

struct Entry {
  bool native = false;
  dnnl::matmul prim;
  memory::desc a_md, b_md, c_md;
};

const dnnl::engine& engine() {
  static const dnnl::engine kEngine(dnnl::engine::kind::cpu, 0);
  return kEngine;
}

memory::desc desc(int64_t rows, int64_t cols, bool trans, memory::data_type type) {
  return memory::desc({rows, cols}, type, trans ? memory::dims{1, rows} : memory::dims{cols, 1});
}

std::shared_ptr<Entry> create(int64_t m, int64_t n, int64_t k, bool ta, bool tb, bool acc) {
  auto e = std::make_shared<Entry>();
  e->a_md = desc(m, k, ta, memory::data_type::bf16);
  e->b_md = desc(k, n, tb, memory::data_type::bf16);
  e->c_md = desc(m, n, false, memory::data_type::f32);
  try {
    dnnl::post_ops ops;
    if (acc) ops.append_sum(1.0f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(e->a_md, e->b_md, e->c_md), attr, engine());
    e->native = std::string(pd.impl_info_str()).rfind("ref", 0) != 0;
    if (e->native) e->prim = dnnl::matmul(pd);
  } catch (const dnnl::error&) {
    e->native = false;
  }
  return e;
}

std::shared_ptr<Entry> lookup(int64_t m, int64_t n, int64_t k, bool ta, bool tb, bool acc) {
  static std::mutex mutex;
  static std::map<Key, std::shared_ptr<Entry>> cache;
  Key key{m, n, k, int(ta) | int(tb) << 1 | int(acc) << 2, get_num_threads()};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= 256) cache.clear();  // many shapes (eval lengths): start over
  return cache[key] = create(m, n, k, ta, tb, acc);
}

}  // namespace bf16_f32

bool gemm_bf16_f32(int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b, const void* a,
                   const void* b, float* c, bool accumulate) {
  using bf16_f32::engine;
  std::shared_ptr<bf16_f32::Entry> e = bf16_f32::lookup(m, n, k, trans_a, trans_b, accumulate);
  if (!e->native) return false;
  sync_omp_threads();
  static thread_local dnnl::stream stream(engine());
  using dnnl::memory;
  memory ma(e->a_md, engine(), const_cast<void*>(a));
  memory mb(e->b_md, engine(), const_cast<void*>(b));
  memory mc(e->c_md, engine(), c);
  e->prim.execute(stream, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
  stream.wait();
  return true;
}

}  // namespace loom::backends::cpu
