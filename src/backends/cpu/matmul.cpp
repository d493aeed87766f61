// The matmul kernel: maps a (batched, broadcast, transposed) matmul onto as
// few oneDNN GEMM calls as possible (gemm.h):
//   - b has no batch (or all-1 batch dims) and a is not transposed: a's batch
//     folds into M, one 2-D GEMM [B*M, K] x [K, N] (a linear layer);
//   - equal batch dims: one batched GEMM;
//   - one side's batch is all ones: one batched GEMM broadcasting that side;
//   - any other broadcast: one 2-D GEMM per output batch item.
// K == 0 gives zeros.
#include <cstring>

#include "backends/cpu/gemm.h"
#include "backends/cpu/kernels.h"
#include "backends/reference/reference.h"

namespace loom::backends::cpu {

void cpu_matmul(const OpCall& call) {
  const ops::TensorType& at = call.inputs[0].type;
  const ops::TensorType& bt = call.inputs[1].type;
  const MutView& out = call.output;
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
