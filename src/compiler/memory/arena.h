// Arena offsets: places buffers with known live ranges (first..last step,
// inclusive) into one block of memory so that no two buffers live at the
// same step overlap. Greedy by size with best-fit gaps: buffers are placed
// largest first, each in the smallest gap between the already placed
// buffers it overlaps in time (the "greedy by size" offset calculation of
// Pisarchyk & Lee, "Efficient Memory Management for Deep Neural Net
// Inference", 2020; XLA's HeapSimulator and TFLite's arena planner use the
// same idea). Assumes nothing about the schedule beyond step indices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace loom::compiler::memory {

/// Offsets are multiples of this (the cpu kernels' 64-byte alignment).
inline constexpr size_t kArenaAlign = 64;

/// One buffer to place: live from step `first` through step `last`
/// (inclusive, first <= last), `nbytes` long.
struct ArenaRequest {
  int first = 0;
  int last = 0;
  size_t nbytes = 0;
};

struct ArenaLayout {
  std::vector<size_t> offset;  // per request, in bytes, kArenaAlign-aligned
  size_t nbytes = 0;           // the arena's size: max(offset + rounded size)
};

/// Places `requests`. Deterministic: ties keep the requests' order.
ArenaLayout place_in_arena(const std::vector<ArenaRequest>& requests);

/// max over steps of the sum of the (rounded) sizes of the requests live at
/// that step: no placement can use fewer bytes.
size_t arena_lower_bound(const std::vector<ArenaRequest>& requests);

/// Rounds `nbytes` up to kArenaAlign.
inline size_t arena_round(size_t nbytes) {
  return (nbytes + kArenaAlign - 1) / kArenaAlign * kArenaAlign;
}

}  // namespace loom::compiler::memory
