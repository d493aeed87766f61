// The Open MPI ProcessGroup ("mpi"), compiled only when loom is built with
// MPI (LOOM_WITH_MPI=1; CMake option LOOM_MPI). Every collective is started
// non-blocking (MPI_Iallreduce, MPI_Ibcast, MPI_Iallgather, MPI_Ibarrier) and
// completed by polling MPI_Test until the group's timeout (--ddp_timeout),
// so a rank whose peer vanished throws instead of hanging. MPI calls are
// serialized by one mutex, so kernels on a backend's stream thread and the
// main thread may both use the group (MPI_THREAD_SERIALIZED is enough).
#pragma once

#include <memory>

#include "loom/dist.h"

namespace loom::dist {

/// MPI_Init_thread (unless MPI is already initialized) and a group over
/// MPI_COMM_WORLD. Throws loom::Error "[dist] mpi: ..." when MPI fails.
/// nullptr-returning stand-in when built without MPI (see mpi_available()).
std::unique_ptr<ProcessGroup> make_mpi_process_group();
/// MPI_Finalize when this process initialized MPI and has not finalized.
void finalize_mpi();

}  // namespace loom::dist
