// Progress for Open MPI's non-blocking collectives. Open MPI 4.1 (Debian's,
// `ompi_info`: "OMPI progress: no") moves a started MPI_Iallreduce only
// inside MPI calls made by the process, so a bucket all-reduce started
// before a GEMM would sit still until the compute thread waits for it. The
// progress thread calls MPI_Test on every registered request, every
// kMpiProgressPollMicros, while any is pending (it sleeps on a condition
// variable when none is). All MPI calls are serialized by mpi_mutex(), so
// MPI_THREAD_SERIALIZED is enough. LOOM_MPI_PROGRESS_THREAD=0 turns the
// thread off (the collective then progresses only when the executable
// polls it between kernels, or in wait()).
// Compiled only with LOOM_WITH_MPI.
#pragma once

#if LOOM_WITH_MPI
// The C API only (Open MPI's deprecated C++ bindings warn under -Wextra).
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <mutex>

namespace loom::dist {

/// The one lock around every MPI call of the process.
std::mutex& mpi_mutex();

/// Microseconds the progress thread sleeps between rounds of MPI_Test.
constexpr int kMpiProgressPollMicros = 50;

/// A request the progress thread tests until it completes. The owner keeps
/// it alive until mpi_progress_remove() returned.
struct MpiPending {
  MPI_Request* request = nullptr;
  /// steady_clock ns when MPI_Test found it complete (then *request is
  /// MPI_REQUEST_NULL), -1 before.
  std::atomic<int64_t> completed_ns{-1};
};

/// Registers `p` with the progress thread (started at the first call, unless
/// LOOM_MPI_PROGRESS_THREAD=0: then nothing happens).
void mpi_progress_add(MpiPending* p);
/// Unregisters `p`; once it returns the thread no longer touches it.
void mpi_progress_remove(MpiPending* p);
/// Stops and joins the thread (before MPI_Finalize); harmless when none runs.
void mpi_progress_stop();

/// Marks MPI unusable for the rest of the process: a collective timed out or
/// failed, and MPI may still write into its buffer later (a collective cannot
/// be cancelled). From then on nothing progresses MPI: the progress thread
/// stops testing, and loom's collectives throw before any MPI call, so no
/// stale reduction lands in memory freed or reused while the error ends the
/// job. (Found in review: the f32 buffer of a timed-out all-reduce is the
/// executable's arena or output.)
void mpi_poison();
/// Whether mpi_poison() was called.
bool mpi_poisoned();

}  // namespace loom::dist
#endif
