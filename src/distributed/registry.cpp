// The ProcessGroup backends by name, one line each. To add one (e.g. NCCL
// for the cuda backend): implement ProcessGroup in its own file with a
// make_<name>_process_group(), and add its line here (docs/distributed.md).
#include "distributed/mpi_process_group.h"
#include "distributed/single_process_group.h"

namespace loom::dist {

bool mpi_available() { return LOOM_WITH_MPI != 0; }

const std::vector<ProcessGroupBackend>& process_group_backends() {
  static const std::vector<ProcessGroupBackend> kBackends = {
      {"single", make_single_process_group, ""},
      {"mpi", LOOM_WITH_MPI ? make_mpi_process_group : nullptr,
       "loom was built without MPI (install libopenmpi-dev and rebuild)"},
  };
  return kBackends;
}

}  // namespace loom::dist
