// The job's ProcessGroup (init_process_group / default_process_group) and
// what launchers put in the environment. Assumes init_process_group is
// called from the main thread before any collective (as `loom train` does).
#include <cstdlib>
#include <mutex>

#include "core/settings.h"
#include "distributed/group_testing.h"
#include "distributed/mpi_process_group.h"
#include "distributed/single_process_group.h"
#include "loom/dist.h"
#include "loom/error.h"

namespace loom::dist {
namespace {

std::unique_ptr<ProcessGroup>& initialized_group() {
  static std::unique_ptr<ProcessGroup> group;
  return group;
}

std::unique_ptr<ProcessGroup>& initialized_graph_group() {
  static std::unique_ptr<ProcessGroup> group;
  return group;
}

ProcessGroup& single_group() {
  static std::unique_ptr<ProcessGroup> group = make_single_process_group();
  return *group;
}

// The value of env var `name` as a non-negative int, or -1 when unset.
int env_int(const char* name) {
  const char* v = settings::environment(name);
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  LOOM_CHECK(*end == '\0' && n >= 0 && n <= (1 << 24), "[dist] ", name, "='", v,
             "' is not a non-negative integer");
  return static_cast<int>(n);
}

std::string backend_list() {
  std::string names = "auto";
  for (const ProcessGroupBackend& b : process_group_backends()) names += ", " + std::string(b.name);
  return names + ", none";
}

}  // namespace

LaunchEnv launch_env() {
  struct Source {
    const char* rank;
    const char* size;
    const char* launcher;
  };
  for (Source s :
       {Source{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "mpirun"},
        Source{"PMI_RANK", "PMI_SIZE", "pmi"}, Source{"RANK", "WORLD_SIZE", "torchrun"}}) {
    int size = env_int(s.size);
    if (size < 0) continue;
    int rank = std::max(0, env_int(s.rank));
    LOOM_CHECK(size >= 1 && rank < size, "[dist] ", s.rank, "=", rank, " and ", s.size, "=", size,
               " do not make a rank of the job");
    return {rank, size, s.launcher};
  }
  return {};
}

bool launched_by_mpirun() {
  std::string l = launch_env().launcher;
  return l == "mpirun" || l == "pmi";
}

ProcessGroup& init_process_group(std::string_view backend) {
  std::string name(backend);
  if (name == "none") name = "single";
  if (name == "auto") {
    // N copies each training alone on the same output_dir would be worse than an error.
    LOOM_CHECK(!launched_by_mpirun() || mpi_available() || launch_env().world_size == 1,
               "[dist] started by mpirun as one of ", launch_env().world_size,
               " ranks, but loom was built without MPI (install libopenmpi-dev and rebuild)");
    name = launched_by_mpirun() && mpi_available() ? "mpi" : "single";
  }
  std::unique_ptr<ProcessGroup>& group = initialized_group();
  if (group) {
    LOOM_CHECK(group->backend_name() == name, "[dist] init_process_group('", backend,
               "'): already initialized with ", group->backend_name());
    return *group;
  }
  for (const ProcessGroupBackend& b : process_group_backends()) {
    if (b.name != name) continue;
    LOOM_CHECK(b.make != nullptr, "[dist] ddp_backend ", name, ": ", b.missing);
    group = b.make();
    initialized_graph_group() = group->duplicate();
    std::atexit(finalize);
    return *group;
  }
  fail("[dist] unknown ddp_backend '", backend, "' (expected ", backend_list(), ")");
}

bool is_initialized() { return initialized_group() != nullptr; }

ProcessGroup& default_process_group() {
  std::unique_ptr<ProcessGroup>& group = initialized_group();
  return group ? *group : single_group();
}

ProcessGroup& graph_process_group() {
  std::unique_ptr<ProcessGroup>& group = initialized_graph_group();
  return group ? *group : single_group();
}

std::unique_ptr<ProcessGroup> replace_graph_process_group_for_testing(
    std::unique_ptr<ProcessGroup> group) {
  std::swap(initialized_graph_group(), group);
  return group;
}

int rank() { return default_process_group().rank(); }
int world_size() { return default_process_group().world_size(); }

void finalize() { finalize_mpi(); }

}  // namespace loom::dist
