// Greedy-by-size, best-fit arena placement (see arena.h for the source).
#include "compiler/memory/arena.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace loom::compiler::memory {
namespace {

struct Placed {
  size_t offset, end;  // [offset, end) in bytes
};

// The best-fit offset for `size` bytes given the byte ranges of buffers live
// at the same time (sorted by offset): the smallest gap that holds it, else
// the top of the highest one.
size_t best_fit(std::vector<Placed>& busy, size_t size) {
  std::sort(busy.begin(), busy.end(),
            [](const Placed& a, const Placed& b) { return a.offset < b.offset; });
  size_t best = SIZE_MAX, best_gap = SIZE_MAX, top = 0;
  for (const Placed& p : busy) {
    if (p.offset > top) {
      size_t gap = p.offset - top;
      if (gap >= size && gap < best_gap) {
        best = top;
        best_gap = gap;
      }
    }
    top = std::max(top, p.end);
  }
  return best != SIZE_MAX ? best : top;
}

}  // namespace

ArenaLayout place_in_arena(const std::vector<ArenaRequest>& requests) {
  ArenaLayout out;
  out.offset.assign(requests.size(), 0);
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return requests[a].nbytes > requests[b].nbytes; });
  std::vector<size_t> placed;  // request indices, in placement order
  std::vector<Placed> busy;
  for (size_t r : order) {
    const ArenaRequest& q = requests[r];
    size_t size = arena_round(q.nbytes);
    busy.clear();
    for (size_t p : placed) {
      const ArenaRequest& o = requests[p];
      if (o.first <= q.last && q.first <= o.last)
        busy.push_back({out.offset[p], out.offset[p] + arena_round(o.nbytes)});
    }
    out.offset[r] = size ? best_fit(busy, size) : 0;
    out.nbytes = std::max(out.nbytes, out.offset[r] + size);
    if (size) placed.push_back(r);
  }
  return out;
}

size_t arena_lower_bound(const std::vector<ArenaRequest>& requests) {
  std::map<int, int64_t> delta;  // step -> change in live bytes
  for (const ArenaRequest& q : requests) {
    delta[q.first] += static_cast<int64_t>(arena_round(q.nbytes));
    delta[q.last + 1] -= static_cast<int64_t>(arena_round(q.nbytes));
  }
  int64_t live = 0, peak = 0;
  for (const auto& [step, d] : delta) {
    live += d;
    peak = std::max(peak, live);
  }
  return static_cast<size_t>(peak);
}

}  // namespace loom::compiler::memory
