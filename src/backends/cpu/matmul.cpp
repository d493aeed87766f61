// The matmul kernel: maps a (batched, broadcast, transposed) matmul onto as
// few oneDNN GEMM calls as possible (gemm.h):
//   - b has no batch (or all-1 batch dims) and a is not transposed: a's batch
//     folds into M, one 2-D GEMM [B*M, K] x [K, N] (a linear layer);
//   - equal batch dims: one batched GEMM;
//   - one side's batch is all ones: one batched GEMM broadcasting that side;
//   - any other broadcast: one 2-D GEMM per output batch item;
//   - layout attrs (perm_a / perm_b / perm_out, set by the matmul_layout
//     pass): the permuted operands and result are strides of one strided
//     batched GEMM (gemm_strided), nothing is copied.
// K == 0 gives zeros.
#include <cstring>
#include <utility>
#include <vector>

#include "backends/cpu/gemm.h"
#include "backends/cpu/kernels.h"
#include "backends/reference/reference.h"

namespace loom::backends::cpu {

namespace {

// Row-major element strides of `shape`.
std::vector<int64_t> matmul_dense_strides(const Shape& shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) st[d - 1] = st[d] * shape[d];
  return st;
}

// Strides of the logical operand permute(stored, perm) (batch dims
// right-aligned to `rank`, missing ones stride 0), then its row and column
// strides after the transpose flag.
std::vector<int64_t> matmul_logical_strides(const Shape& stored, const std::vector<int64_t>& perm,
                                            bool trans, size_t rank, Shape* dims) {
  std::vector<int64_t> st = matmul_dense_strides(stored), out(rank, 0);
  size_t r = stored.size();
  dims->assign(rank, 1);
  for (size_t i = 0; i < r; ++i) {
    size_t src = perm.empty() ? i : static_cast<size_t>(perm[i]);
    out[rank - r + i] = st[src];
    (*dims)[rank - r + i] = stored[src];
  }
  if (trans) {
    std::swap(out[rank - 2], out[rank - 1]);
    std::swap((*dims)[rank - 2], (*dims)[rank - 1]);
  }
  return out;
}

void matmul_with_layout(const OpCall& call) {
  const ops::Attrs& at = *call.attrs;
  const MutView& out = call.output;
  size_t rank = out.type.shape.size();
  Shape da, db;
  std::vector<int64_t> sa =
      matmul_logical_strides(call.inputs[0].type.shape, at.perm_a, at.trans_a, rank, &da);
  std::vector<int64_t> sb =
      matmul_logical_strides(call.inputs[1].type.shape, at.perm_b, at.trans_b, rank, &db);
  // The logical product's shape and its strides inside the stored result.
  std::vector<int64_t> so = matmul_dense_strides(out.type.shape), sc(rank);
  Shape logical(rank);
  for (size_t i = 0; i < rank; ++i) {
    size_t j = at.perm_out.empty() ? i : static_cast<size_t>(at.perm_out[i]);
    logical[j] = out.type.shape[i];
    sc[j] = so[i];
  }
  GemmStrides s;
  s.batch.assign(logical.begin(), logical.end() - 2);
  s.m = logical[rank - 2], s.n = logical[rank - 1];
  s.k = da[rank - 1];
  if (out.type.numel() == 0) return;
  if (s.k == 0) {
    std::memset(out.data, 0, out.type.nbytes());
    return;
  }
  for (size_t d = 0; d + 2 < rank; ++d) {
    if (da[d] != s.batch[d]) sa[d] = 0;  // broadcast batch dim
    if (db[d] != s.batch[d]) sb[d] = 0;
  }
  s.a = std::move(sa), s.b = std::move(sb), s.c = std::move(sc);
  gemm_strided(s, out.type.dtype, call.inputs[0].data, call.inputs[1].data, out.data);
}

}  // namespace

void cpu_matmul(const OpCall& call) {
  const ops::TensorType& at = call.inputs[0].type;
  const ops::TensorType& bt = call.inputs[1].type;
  const MutView& out = call.output;
  const ops::Attrs& attrs = *call.attrs;
  if (!attrs.perm_a.empty() || !attrs.perm_b.empty() || !attrs.perm_out.empty())
    return matmul_with_layout(call);
  bool ta = call.attrs->trans_a, tb = call.attrs->trans_b;
  size_t ra = at.shape.size(), ro = out.type.shape.size();
  int64_t m = out.type.shape[ro - 2], n = out.type.shape[ro - 1];
  int64_t k = ta ? at.shape[ra - 2] : at.shape[ra - 1];
  if (out.type.numel() == 0) return;
  if (k == 0) {
    std::memset(out.data, 0, out.type.nbytes());
    return;
  }
  Shape batch(out.type.shape.begin(), out.type.shape.end() - 2);
  Shape batch_a(at.shape.begin(), at.shape.end() - 2),
      batch_b(bt.shape.begin(), bt.shape.end() - 2);
  int64_t nb = numel(batch), na_items = numel(batch_a), nb_items = numel(batch_b);
  batch_a.insert(batch_a.begin(), batch.size() - batch_a.size(), 1);
  batch_b.insert(batch_b.begin(), batch.size() - batch_b.size(), 1);
  DType dt = out.type.dtype;
  const void *a = call.inputs[0].data, *b = call.inputs[1].data;
  if (nb_items == 1 && !ta) return gemm({1, na_items * m, n, k, false, tb}, dt, a, b, out.data);
  if (batch_a == batch_b || na_items == 1 || nb_items == 1) {
    GemmShape s{nb, m, n, k, ta, tb, na_items == 1 && nb > 1, nb_items == 1 && nb > 1};
    return gemm(s, dt, a, b, out.data);
  }
  // General broadcast: per output batch item, locate its a and b matrices.
  reference::BroadcastIndex ia(batch_a, batch), ib(batch_b, batch);
  size_t es = dtype_size(dt);
  for (int64_t i = 0; i < nb; ++i)
    gemm({1, m, n, k, ta, tb}, dt, static_cast<const char*>(a) + ia(i) * m * k * es,
         static_cast<const char*>(b) + ib(i) * k * n * es,
         static_cast<char*>(out.data) + i * m * n * es);
}

}  // namespace loom::backends::cpu
