// loom/dist.h: processes that train together (data parallel). A
// ProcessGroup is the set of ranks of one job and the collectives between
// them (all_reduce, broadcast, all_gather, barrier), over an existing engine:
// Open MPI now ("mpi"), NCCL later; "single" is the one-rank group used when
// nothing was initialized. Collectives are blocking and must be called in the
// same order, with the same sizes, on every rank (as MPI requires).
// Assumes: one process per rank; the MPI backend exists only when loom was
// built with Open MPI (LOOM_WITH_MPI, CMake -DLOOM_MPI=ON/AUTO); the group
// lives until exit (finalize() at exit is registered by init_process_group).
//
// Example (tools/loom/launch.cpp and main.cpp do the first and last steps
// for `loom train` / `loom evaluate`; the Trainer does the middle ones):
//   loom::dist::init_process_group("auto");            // mpi under mpirun, else single
//   loom::dist::ProcessGroup& pg = loom::dist::default_process_group();
//   loom::dist::check_same_on_all_ranks("parameters", {"wte.weight f32[50257,768]", ...});
//   loss.backward();
//   for (Tensor& g : grads) g = loom::all_reduce(g, ReduceOp::mean);  // in the step graph
//   loom::lazy::mark_step();
//   double n = examples; pg.all_reduce(&n, 1, DataType::f64, ReduceOp::sum);  // eval metrics
//   loom::dist::run_main([&] { train(); });            // a throw ends every rank
//
// The all_reduce op (loom/collective.h) runs on graph_process_group(), a
// duplicate of the default group, on the lazy executor's thread; direct calls
// like the one above use default_process_group() from the main thread. The
// two never match each other's collectives, so mixing them is safe as long as
// each stream is issued in the same order on every rank.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loom/dtype.h"

namespace loom::dist {

/// Element types a collective reduces. bf16/f16 are reduced in f32 and
/// rounded back to nearest even (so every rank gets the same bits).
enum class DataType : uint8_t { f32, f64, bf16, f16, i32, i64 };
/// Bytes per element: 4, 8, 2, 2, 4, 8.
size_t data_type_size(DataType t);
/// "f32", "f64", "bf16", "f16", "i32", "i64".
const char* data_type_name(DataType t);
/// The DataType of a loom dtype; throws loom::Error "[dist] dtype bool
/// cannot be reduced" for bool.
DataType data_type_of(DType dtype);

/// sum: elementwise sum over ranks. mean: sum / world_size (integers:
/// truncated toward zero, as C++ division). max: elementwise maximum.
enum class ReduceOp : uint8_t { sum, mean, max };
/// "sum", "mean", "max".
const char* reduce_op_name(ReduceOp op);
/// Parses reduce_op_name(); throws loom::Error "[dist] unknown reduce op 'x'".
ReduceOp reduce_op_from_name(std::string_view name);

/// A started asynchronous collective. wait() blocks until it completed (the
/// buffer then holds the result and may be touched again) and rethrows its
/// failure (a timeout: loom::Error "[dist] all_reduce timed out after 1800 s
/// ..."). Destroying an unwaited Work waits for it.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
  /// True once completed (never blocks). On MPI it also drives the engine's
  /// progress (MPI_Request_get_status), so polling it between kernels moves
  /// a started collective along.
  virtual bool is_completed() = 0;
  /// steady_clock nanoseconds since its epoch when the collective was seen
  /// completed (by wait(), is_completed() or a progress thread), or -1 while
  /// not yet seen. AllReduceTime counts start -> this point.
  virtual int64_t completed_ns() const { return -1; }
};

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  /// This process's rank in [0, world_size()).
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  /// The backend's registry name: "single", "mpi".
  virtual std::string_view backend_name() const = 0;

  /// Reduces `count` elements at `data` over all ranks, in place: every rank
  /// ends with the same result. Counted in the metrics: AllReduceCount (+1),
  /// AllReduceBytes (+count * size), AllReduceTime (ns). Throws loom::Error
  /// "[dist] ..." when the engine fails or the timeout (set_timeout) passes.
  void all_reduce(void* data, size_t count, DataType type, ReduceOp op);
  /// The same, started now; wait() on the returned Work before touching
  /// `data` (for gradient buckets: start one, keep computing, wait later).
  /// AllReduceTime counts start -> completion (not the caller's other work);
  /// AllReduceWaitTime (ns) the time wait() blocked the caller.
  std::unique_ptr<Work> all_reduce_async(void* data, size_t count, DataType type, ReduceOp op);
  /// Every rank gives `nbytes` at `send`; `recv` (world_size() * nbytes bytes,
  /// not overlapping `send`) gets all of them in rank order. Started now:
  /// wait() on the Work before touching either buffer. Metrics:
  /// AllGatherCount, AllGatherBytes (+world_size() * nbytes, received),
  /// AllGatherTime, AllGatherWaitTime (as for all_reduce_async).
  std::unique_ptr<Work> all_gather_async(const void* send, void* recv, size_t nbytes);
  /// `send` holds world_size() blocks of `count` elements; `recv` (`count`
  /// elements, not overlapping `send`) gets block rank() of their elementwise
  /// reduction (sum or mean; bf16/f16 in f32) over the ranks: MPI's
  /// Reduce_scatter_block. Started now, wait() before touching the buffers.
  /// Metrics: ReduceScatterCount, ReduceScatterBytes (+world_size() * count *
  /// size, sent), ReduceScatterTime, ReduceScatterWaitTime. Throws
  /// loom::Error "[dist] ..." for ReduceOp::max or when the engine fails.
  std::unique_ptr<Work> reduce_scatter_async(const void* send, void* recv, size_t count,
                                             DataType type, ReduceOp op);
  /// Copies `nbytes` at `data` from rank `root` to every rank (in place).
  void broadcast(void* data, size_t nbytes, int root);
  /// Every rank gives `bytes` (the same length on every rank, else the engine
  /// fails); returns all of them in rank order (world_size() * size bytes).
  std::vector<uint8_t> all_gather(const std::vector<uint8_t>& bytes);
  /// Returns once every rank has called it.
  void barrier();

  /// How long one collective may wait for the others before it throws
  /// (HF's --ddp_timeout, default 1800 s).
  void set_timeout(std::chrono::seconds timeout) { timeout_ = timeout; }
  std::chrono::seconds timeout() const { return timeout_; }

  /// Ends every rank of the job now with exit code `code` (MPI_Abort); for a
  /// single rank, std::_Exit(code). Never returns. Print the message first.
  [[noreturn]] virtual void abort(int code) = 0;

  /// A second group over the same ranks whose collectives never match this
  /// one's (MPI_Comm_dup): collectives issued by two threads (the lazy
  /// executor's all_reduce ops and direct calls on the main thread) must not
  /// interleave in different orders on different ranks. Every rank calls it.
  virtual std::unique_ptr<ProcessGroup> duplicate() = 0;

 protected:
  // What a backend implements; the public functions above add the metrics.
  virtual std::unique_ptr<Work> start_all_reduce(void* data, size_t count, DataType type,
                                                 ReduceOp op) = 0;
  /// all_gather_async / reduce_scatter_async of a backend; the defaults throw
  /// loom::Error "[dist] <backend> has no all_gather" (a backend without them).
  virtual std::unique_ptr<Work> start_all_gather(const void* send, void* recv, size_t nbytes);
  virtual std::unique_ptr<Work> start_reduce_scatter(const void* send, void* recv, size_t count,
                                                     DataType type, ReduceOp op);
  virtual void do_broadcast(void* data, size_t nbytes, int root) = 0;
  virtual std::vector<uint8_t> do_all_gather(const std::vector<uint8_t>& bytes) = 0;
  virtual void do_barrier() = 0;

 private:
  std::chrono::seconds timeout_{1800};
};

// ---- the job's group ----

/// Creates the job's group with `backend`: "mpi" (MPI_Init_thread, rank and
/// size of MPI_COMM_WORLD), "single" (one rank), "none" (= single), or
/// "auto": mpi when launched by mpirun (launched_by_mpirun()), else single.
/// Also makes graph_process_group() and registers finalize() at exit.
/// Throws loom::Error "[dist] unknown ddp_backend 'x' (expected auto,
/// single, mpi, none)", "[dist] ddp_backend mpi: loom was built without MPI
/// (install libopenmpi-dev and rebuild)", "[dist] started by mpirun as one
/// of 2 ranks, but loom was built without MPI ...", or when called twice
/// with a different backend.
ProcessGroup& init_process_group(std::string_view backend = "auto");
/// True after init_process_group().
bool is_initialized();
/// The job's group: the initialized one, else a one-rank group.
ProcessGroup& default_process_group();
/// The group the all_reduce op's kernels use: default_process_group()'s
/// duplicate() (made by init_process_group), so graph collectives, which run
/// on the lazy executor's thread, stay apart from direct calls. Give it the
/// same timeout (set_timeout) as the default group.
ProcessGroup& graph_process_group();
/// Shorthands for default_process_group().rank() / world_size().
int rank();
int world_size();
/// Frees the engine (MPI_Finalize) after a barrier-free shutdown; called at
/// exit by init_process_group, harmless to call twice.
void finalize();

// ---- launch ----

/// Rank and world size a launcher put in the environment: Open MPI's
/// OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE, else PMI_RANK / PMI_SIZE,
/// else torchrun's RANK / WORLD_SIZE; {0, 1} when none is set. Throws
/// loom::Error "[dist] OMPI_COMM_WORLD_SIZE='x' is not a non-negative
/// integer", or "[dist] RANK=3 and WORLD_SIZE=2 do not make a rank of the job".
struct LaunchEnv {
  int rank = 0;
  int world_size = 1;
  std::string launcher;  // "mpirun", "pmi", "torchrun" or "" (none)
};
LaunchEnv launch_env();
/// True when an MPI launcher started this process (OMPI_COMM_WORLD_SIZE or
/// PMI_SIZE is set).
bool launched_by_mpirun();
/// Whether the MPI backend was compiled in.
bool mpi_available();

// ---- the ProcessGroup backends (registry.cpp: one line each) ----

/// Makes a group; called once, by init_process_group.
using ProcessGroupFactory = std::unique_ptr<ProcessGroup> (*)();
struct ProcessGroupBackend {
  std::string_view name;
  ProcessGroupFactory make;  // nullptr when not compiled in
  std::string_view missing;  // why make is nullptr ("built without MPI ...")
};
/// Every known backend, compiled in or not ("single", "mpi", ...).
const std::vector<ProcessGroupBackend>& process_group_backends();

// ---- start-up checks and faults ----

/// Compares a 128-bit hash of `bytes` across ranks (all_gather of the
/// hashes). Throws loom::Error "[dist] <what> differ between ranks: rank 1
/// differs from rank 0" when any rank differs. Every rank must call it.
void check_same_on_all_ranks(std::string_view what, std::string_view bytes);
/// The same for a list of items (e.g. parameters as "name f32[768,768]"):
/// on a mismatch the message names the first differing item:
///   "[dist] parameters differ between ranks: rank 1 has 'wte.weight
///   f32[10,8]' at item 0, rank 0 has 'wte.weight f32[12,8]'"
/// (or "rank 1 has 3 items, rank 0 has 4"). Every rank must call it.
void check_same_on_all_ranks(std::string_view what, const std::vector<std::string>& items);

/// "[rank 1] " when world_size() > 1, else "" (prefix of error lines).
std::string rank_prefix();
/// Runs `body`; when it throws, prints "loom: error: [rank R] <message>" to
/// stderr and, with more than one rank, aborts the whole job (abort(1)):
/// Open MPI's mpirun then kills the other ranks, even those blocked in a
/// collective. With one rank the exception propagates unchanged.
void run_main(const std::function<void()>& body);

}  // namespace loom::dist
