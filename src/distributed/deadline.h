// The deadline of a collective: now + a timeout, saturated at the clock's
// largest time point. Assumes a steady clock with an int64 count (ns on
// libstdc++): now() + seconds(t) overflows for t > ~9.2e9 s, which is
// undefined behaviour and in practice a deadline in the past (every
// collective would time out at once).
#pragma once

#include <chrono>

namespace loom::dist {

/// `now + timeout`, or time_point::max() where that sum is not representable.
/// A negative timeout gives `now` (the collective times out at its first poll).
inline std::chrono::steady_clock::time_point deadline_after(
    std::chrono::steady_clock::time_point now, std::chrono::seconds timeout) {
  using Clock = std::chrono::steady_clock;
  if (timeout.count() <= 0) return now;
  const Clock::duration room = Clock::time_point::max() - now;
  // Compare in seconds (floor of the room): the cast of `timeout` itself could overflow.
  if (timeout >= std::chrono::duration_cast<std::chrono::seconds>(room))
    return Clock::time_point::max();
  return now + std::chrono::duration_cast<Clock::duration>(timeout);
}

}  // namespace loom::dist
