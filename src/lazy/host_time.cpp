// record_host_step / add_host_wait_ns (host_time.h): the interval between two
// launches, less the waits counted inside it.
#include "lazy/host_time.h"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "loom/metrics.h"

namespace loom::lazy {
namespace {

using Clock = std::chrono::steady_clock;

struct HostClock {
  std::mutex mu;
  bool started = false;
  Clock::time_point last_launch;
  std::atomic<int64_t> waited_ns{0};
};
HostClock& host_clock() {
  static HostClock* c = new HostClock();  // never destroyed: used from exit-time drains
  return *c;
}

}  // namespace

void add_host_wait_ns(int64_t ns) { host_clock().waited_ns.fetch_add(ns); }

void record_host_step() {
  HostClock& c = host_clock();
  std::lock_guard<std::mutex> lock(c.mu);
  Clock::time_point now = Clock::now();
  int64_t waited = c.waited_ns.exchange(0);
  if (c.started) {
    int64_t interval =
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - c.last_launch).count();
    metrics::add_time("HostTime", std::max<int64_t>(0, interval - waited));
  }
  c.started = true;
  c.last_launch = now;
}

}  // namespace loom::lazy
