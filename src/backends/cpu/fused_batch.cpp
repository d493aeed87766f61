// The cpu backend's batched fused launch (Backend::run_fused_batch): the
// chunks of every group of the batch are listed once and evaluated in one
// OpenMP region, so an optimizer step over N parameters is one parallel
// pass over all their elements (the multi-tensor apply of torch's foreach /
// fused AdamW: torch/optim/adamw.py, aten's fused_adam) instead of N
// regions, each of which ran a small parameter on one thread. Each chunk
// is the same eval_fused_chunk call run_fused_chunked makes — or, for a
// group that is exactly AdamW's update, the direct kernel of adamw.h with
// the same arithmetic — so the bytes are those of the unbatched schedule.
// Assumes the groups are independent and have no reduction
// (compiler/memory/batch.h). Counts the direct AdamW groups run
// (metrics counter AdamWGroupKernels).
#include <algorithm>
#include <vector>

#include "backends/cpu/adamw.h"
#include "backends/cpu/fused.h"
#include "loom/metrics.h"

namespace loom::backends::cpu {
namespace {

struct BatchChunk {
  int call;
  int64_t begin, n;
};

}  // namespace

void run_fused_batch_chunked(const std::vector<FusedCall>& calls) {
  // Kept between launches (an optimizer step lists ~16k chunks): a fresh
  // list would be a fresh mmap, and its page faults, every step.
  // Per calling thread; the OpenMP workers read it through this reference.
  static thread_local std::vector<BatchChunk> chunk_list;
  std::vector<BatchChunk>& chunks = chunk_list;
  chunks.clear();
  static thread_local std::vector<AdamWGroup> adamw_list;
  static thread_local std::vector<char> direct_list;
  std::vector<AdamWGroup>& adamw = adamw_list;
  std::vector<char>& direct = direct_list;
  adamw.assign(calls.size(), AdamWGroup{});
  direct.assign(calls.size(), 0);
  int64_t matched = 0;
  for (size_t c = 0; c < calls.size(); ++c) {
    direct[c] = match_adamw_group(calls[c], &adamw[c]);
    matched += direct[c];
    const int64_t total = numel(calls[c].group->shape);
    for (int64_t begin = 0; begin < total; begin += kFusedChunk)
      chunks.push_back({static_cast<int>(c), begin, std::min(kFusedChunk, total - begin)});
  }
  const int64_t count = static_cast<int64_t>(chunks.size());
#pragma omp parallel for schedule(static) if (count > 4)
  for (int64_t i = 0; i < count; ++i) {
    const BatchChunk& ch = chunks[i];
    if (direct[ch.call])
      run_adamw_group(calls[ch.call], adamw[ch.call], ch.begin, ch.n);
    else
      eval_fused_chunk(calls[ch.call], ch.begin, ch.n);
  }
  if (matched) metrics::add_counter("AdamWGroupKernels", matched);
}

}  // namespace loom::backends::cpu
