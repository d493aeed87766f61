// The Trainer's data-parallel seam over dist::default_process_group() (see
// ddp.h): the traced reductions are the all_reduce op (loom/collective.h,
// graph nodes run by the executor on dist::graph_process_group()); the host
// ones call the group directly.
#include "train/ddp.h"

#include <algorithm>
#include <cstring>

#include "loom/collective.h"
#include "loom/dist.h"
#include "loom/error.h"
#include "loom/ops.h"

namespace loom::train {

int64_t ddp_rank() { return dist::rank(); }
int64_t ddp_world_size() { return dist::world_size(); }

Tensor all_reduce_mean(const Tensor& x) {
  return ddp_world_size() == 1 ? x : all_reduce(x, dist::ReduceOp::mean);
}
Tensor all_reduce_sum(const Tensor& x) {
  return ddp_world_size() == 1 ? x : all_reduce(x, dist::ReduceOp::sum);
}

std::vector<double> host_all_reduce_sum(std::vector<double> values) {
  if (ddp_world_size() > 1 && !values.empty())
    dist::default_process_group().all_reduce(values.data(), values.size(), dist::DataType::f64,
                                             dist::ReduceOp::sum);
  return values;
}

std::vector<std::string> host_all_gather(const std::string& bytes) {
  const auto world = static_cast<size_t>(ddp_world_size());
  if (world == 1) return {bytes};
  dist::ProcessGroup& pg = dist::default_process_group();
  // dist's all_gather takes equal lengths: the sizes first, then padded bytes.
  std::vector<double> size(world, 0.0);
  size[static_cast<size_t>(ddp_rank())] = static_cast<double>(bytes.size());
  size = host_all_reduce_sum(std::move(size));
  const auto longest = static_cast<size_t>(*std::max_element(size.begin(), size.end()));
  std::vector<uint8_t> mine(longest, 0);
  std::memcpy(mine.data(), bytes.data(), bytes.size());
  const std::vector<uint8_t> all = pg.all_gather(mine);
  LOOM_CHECK(all.size() == longest * world, "[ddp] all_gather returned ", all.size(),
             " bytes, expected ", longest * world);
  std::vector<std::string> out;
  for (size_t r = 0; r < world; ++r)
    out.emplace_back(reinterpret_cast<const char*>(all.data() + r * longest),
                     static_cast<size_t>(size[r]));
  return out;
}

void ddp_barrier() {
  if (ddp_world_size() > 1) dist::default_process_group().barrier();
}

void check_same_on_all_ranks(const std::string& what, const std::string& bytes) {
  dist::check_same_on_all_ranks(what, bytes);
}

void check_same_items_on_all_ranks(const std::string& what, const std::vector<std::string>& items) {
  dist::check_same_on_all_ranks(what, items);
}

}  // namespace loom::train
