// Gradient buckets (see grad_buckets.h). torch DDP's Reducer orders buckets
// by the reverse of model.parameters() and caps them at bucket_cap_mb
// (torch/nn/parallel/distributed.py, _compute_bucket_assignment_by_size);
// unlike torch the first bucket has the same cap as the others.
#include "train/grad_buckets.h"

#include "loom/error.h"
#include "loom/ops.h"

namespace loom::train {

std::vector<GradBucket> plan_grad_buckets(const std::vector<int64_t>& bytes,
                                          const std::vector<DType>& dtypes, int64_t cap_bytes) {
  LOOM_CHECK(cap_bytes > 0, "[ddp] bucket cap must be > 0 bytes, got ", cap_bytes);
  LOOM_CHECK(bytes.size() == dtypes.size(), "[ddp] ", bytes.size(), " parameter sizes but ",
             dtypes.size(), " dtypes");
  std::vector<GradBucket> buckets;
  int64_t filled = 0;
  for (size_t k = bytes.size(); k-- > 0;) {
    const bool fits = !buckets.empty() && filled + bytes[k] <= cap_bytes &&
                      dtypes[buckets.back().front()] == dtypes[k];
    if (!fits) {
      buckets.emplace_back();
      filled = 0;
    }
    buckets.back().push_back(k);
    filled += bytes[k];
  }
  return buckets;
}

int64_t all_reduce_gradients(const std::vector<Tensor>& params, double cap_mb,
                             const std::function<Tensor(const Tensor&)>& reduce) {
  LOOM_CHECK(cap_mb > 0, "[ddp] ddp_bucket_cap_mb must be > 0, got ", cap_mb);
  std::vector<int64_t> bytes;
  std::vector<DType> dtypes;
  for (const Tensor& p : params) {
    const DType dt = p.grad().defined() ? p.grad().dtype() : p.dtype();
    bytes.push_back(p.numel() * static_cast<int64_t>(dtype_size(dt)));
    dtypes.push_back(dt);
  }
  const auto cap = static_cast<int64_t>(cap_mb * 1024.0 * 1024.0);
  const std::vector<GradBucket> buckets =
      plan_grad_buckets(bytes, dtypes, std::max<int64_t>(cap, 1));
  for (const GradBucket& b : buckets) {
    std::vector<Tensor> flat;
    for (size_t k : b) {
      const Tensor& p = params[k];
      Tensor g = p.grad().defined() ? p.grad() : zeros_like(p);
      flat.push_back(reshape(g, {g.numel()}));
    }
    // One collective per bucket: [sum of numel] in, the same out.
    Tensor reduced = reduce(flat.size() == 1 ? flat[0] : concat(flat, 0));
    int64_t offset = 0;
    for (size_t k : b) {
      Tensor p = params[k];
      const int64_t n = p.numel();
      p.set_grad(reshape(slice(reduced, 0, offset, offset + n), p.shape()));
      offset += n;
    }
  }
  return static_cast<int64_t>(buckets.size());
}

}  // namespace loom::train
