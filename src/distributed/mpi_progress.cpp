// The MPI progress thread (see mpi_progress.h). Lock order: the registry's
// lock, then mpi_mutex(); nobody takes them the other way round (a Work
// starts its request under mpi_mutex() alone, then registers).
#include "distributed/mpi_progress.h"

#if LOOM_WITH_MPI
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "core/settings.h"

namespace loom::dist {
namespace {

int64_t progress_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool progress_thread_wanted() { return settings::flag(Setting::mpi_progress_thread); }

struct ProgressRegistry {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<MpiPending*> pending;
  std::thread thread;
  bool stop = false;

  // One round: MPI_Test on each pending request; completed (or failed: wait()
  // tests it again and reports the error) ones leave the list.
  void test_all() {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    if (mpi_poisoned()) return;  // a failed collective: MPI must not move again
    for (size_t i = 0; i < pending.size();) {
      int done = 0;
      const int rc = MPI_Test(pending[i]->request, &done, MPI_STATUS_IGNORE);
      if (rc == MPI_SUCCESS && done) pending[i]->completed_ns.store(progress_now_ns());
      if (rc != MPI_SUCCESS || done) {
        pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      ++i;
    }
  }

  void loop() {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return stop || !pending.empty(); });
      if (stop) return;
      test_all();
      cv.wait_for(lock, std::chrono::microseconds(kMpiProgressPollMicros), [&] { return stop; });
    }
  }
};

// Never destroyed: a Work may be finished by an exit-time drain.
ProgressRegistry& progress_registry() {
  static auto* r = new ProgressRegistry;
  return *r;
}

}  // namespace

std::mutex& mpi_mutex() {
  static auto* m = new std::mutex;
  return *m;
}

namespace {
std::atomic<bool> g_mpi_poisoned{false};
}  // namespace

void mpi_poison() { g_mpi_poisoned.store(true); }
bool mpi_poisoned() { return g_mpi_poisoned.load(); }

void mpi_progress_add(MpiPending* p) {
  static const bool wanted = progress_thread_wanted();
  if (!wanted) return;
  ProgressRegistry& r = progress_registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.stop) return;  // finalizing: the owner's wait() completes it
  if (!r.thread.joinable()) r.thread = std::thread([&r] { r.loop(); });
  r.pending.push_back(p);
  r.cv.notify_one();
}

void mpi_progress_remove(MpiPending* p) {
  ProgressRegistry& r = progress_registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.pending.erase(std::remove(r.pending.begin(), r.pending.end(), p), r.pending.end());
}

void mpi_progress_stop() {
  ProgressRegistry& r = progress_registry();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    r.stop = true;
    r.pending.clear();
  }
  r.cv.notify_all();
  if (r.thread.joinable()) r.thread.join();
}

}  // namespace loom::dist
#endif
