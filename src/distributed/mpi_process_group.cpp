// The Open MPI ProcessGroup (see mpi_process_group.h). Without LOOM_WITH_MPI
// this file compiles to stand-ins that are never called (the registry marks
// "mpi" as missing). bf16/f16 are reduced as f32 and rounded back (MPI has
// no 16-bit float type); mean is MPI_SUM divided by the world size on
// completion. A started all_reduce is moved along by the progress thread
// (mpi_progress.h) until its wait(). Open MPI 4.1 (Debian bookworm's openmpi-bin).
#include "distributed/mpi_process_group.h"

#include "distributed/deadline.h"

#if LOOM_WITH_MPI
#include "distributed/mpi_progress.h"  // <mpi.h>, mpi_mutex()

#include <cstdlib>
#include <functional>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/host_name.h"
#endif

#include "loom/error.h"

namespace loom::dist {

#if LOOM_WITH_MPI
namespace {

bool g_mpi_initialized_here = false;

int64_t mpi_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void mpi_check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  fail("[dist] mpi: ", what, " failed: ", std::string(text, len));
}

// Throws when an earlier collective failed (mpi_progress.h: mpi_poison).
// Call with mpi_mutex() held, before any MPI call of a collective.
void mpi_check_usable(const char* what) {
  if (mpi_poisoned())
    fail("[dist] ", what,
         ": an earlier collective failed or timed out; no further collectives "
         "in this job");
}

// Host name of every rank of MPI_COMM_WORLD (gathered once at start-up by
// mpi_gather_hosts), so that a timeout can name the peers it waited for.
std::vector<std::string>& mpi_hosts() {
  static std::vector<std::string> hosts;
  return hosts;
}

// "rank 1 on hostb" for each other rank (the first 8), for timeout messages:
// the rank that stopped, or whose link is down, is one of them.
std::string mpi_peers() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const auto& hosts = mpi_hosts();
  std::string out;
  int listed = 0;
  for (size_t r = 0; r < hosts.size(); ++r) {
    if (static_cast<int>(r) == rank) continue;
    if (++listed > 8) return out + ", ... (" + std::to_string(hosts.size() - 1) + " peers)";
    out += (out.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) + " on " + hosts[r];
  }
  return out.empty() ? "no peer" : out;
}

// Polls `request` until it completes or `timeout` passes (then throws, and
// poisons MPI: the request stays in flight).
// Yields at first, then sleeps up to 1 ms between polls, so a rank waiting
// for a slow peer leaves the cores to it.
void mpi_wait(MPI_Request& request, std::chrono::seconds timeout, const char* what) {
  const auto deadline = deadline_after(std::chrono::steady_clock::now(), timeout);  // saturates
  std::chrono::microseconds pause{0};
  for (int polls = 0;; ++polls) {
    int done = 0;
    int rc = MPI_SUCCESS;
    {
      std::lock_guard<std::mutex> lock(mpi_mutex());
      mpi_check_usable(what);
      rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) mpi_poison();
    }
    mpi_check(rc, what);
    if (done) return;
    if (std::chrono::steady_clock::now() > deadline) {
      mpi_poison();
      fail("[dist] ", what, " timed out after ", timeout.count(),
           " s (a rank stopped or never reached it, or the network to it is down; waiting for ",
           mpi_peers(), "; --ddp_timeout sets the limit)");
    }
    if (polls < 64) {
      std::this_thread::yield();
    } else {
      pause = std::min(std::chrono::microseconds{1000}, pause + std::chrono::microseconds{20});
      std::this_thread::sleep_for(pause);
    }
  }
}

MPI_Datatype mpi_type(DataType t) {
  switch (t) {
    case DataType::f32:
    case DataType::bf16:  // reduced through an f32 copy
    case DataType::f16:
      return MPI_FLOAT;
    case DataType::f64:
      return MPI_DOUBLE;
    case DataType::i32:
      return MPI_INT32_T;
    case DataType::i64:
      return MPI_INT64_T;
  }
  return MPI_DATATYPE_NULL;
}

template <typename T>
void divide_all(void* data, size_t count, int n) {
  T* p = static_cast<T*>(data);
  for (size_t i = 0; i < count; ++i) p[i] = static_cast<T>(p[i] / static_cast<T>(n));
}

// The end of a sum/mean reduction of `count` elements of `type` in `data`:
// with `wide` (the f32 sums of a bf16/f16 reduction) mean divides it and it is
// rounded back into `data`; else mean divides `data` in its own type.
void finish_reduction(void* data, size_t count, DataType type, ReduceOp op, int world,
                      std::vector<float>* wide) {
  if (wide) {
    if (op == ReduceOp::mean)
      for (float& v : *wide) v /= static_cast<float>(world);
    auto* h = static_cast<uint16_t*>(data);
    for (size_t i = 0; i < count; ++i)
      h[i] = type == DataType::bf16 ? float_to_bf16((*wide)[i]) : float_to_f16((*wide)[i]);
    return;
  }
  if (op != ReduceOp::mean) return;
  switch (type) {
    case DataType::f32:
      return divide_all<float>(data, count, world);
    case DataType::f64:
      return divide_all<double>(data, count, world);
    case DataType::i32:
      return divide_all<int32_t>(data, count, world);
    case DataType::i64:
      return divide_all<int64_t>(data, count, world);
    default:
      return;
  }
}

// One MPI_Iallreduce; finishing converts 16-bit types back and applies mean.
class MpiAllReduceWork final : public Work {
 public:
  MpiAllReduceWork(MPI_Comm comm, void* data, size_t count, DataType type, ReduceOp op, int world,
                   std::chrono::seconds timeout)
      : data_(data), count_(count), type_(type), op_(op), world_(world), timeout_(timeout) {
    void* buf = data;
    if (type == DataType::bf16 || type == DataType::f16) {
      wide_.resize(count);
      const auto* h = static_cast<const uint16_t*>(data);
      for (size_t i = 0; i < count; ++i)
        wide_[i] = type == DataType::bf16 ? bf16_to_float(h[i]) : f16_to_float(h[i]);
      buf = wide_.data();
    }
    {
      std::lock_guard<std::mutex> lock(mpi_mutex());
      mpi_check_usable("all_reduce");
      mpi_check(MPI_Iallreduce(MPI_IN_PLACE, buf, static_cast<int>(count), mpi_type(type),
                               op == ReduceOp::max ? MPI_MAX : MPI_SUM, comm, &request_),
                "all_reduce");
    }
    pending_.request = &request_;
    mpi_progress_add(&pending_);  // moves it along while the caller computes
  }
  ~MpiAllReduceWork() override {
    mpi_progress_remove(&pending_);
    if (!done_ && request_ != MPI_REQUEST_NULL) {
      try {
        wait();
      } catch (...) {
      }
    }
  }
  void wait() override {
    if (done_) return;
    done_ = true;
    mpi_progress_remove(&pending_);  // the thread no longer tests request_
    try {
      if (request_ != MPI_REQUEST_NULL) mpi_wait(request_, timeout_, "all_reduce");  // frees it
      int64_t unseen = -1;
      pending_.completed_ns.compare_exchange_strong(unseen, mpi_now_ns());
    } catch (...) {
      // Timed out: MPI_Iallreduce still owns the f32 staging buffer (MPI
      // cannot cancel a collective: MPI_Cancel is for point-to-point only),
      // and may write into it until the job aborts. Freeing it here (or in
      // the destructor) would let MPI write into freed memory, so it is
      // leaked on purpose; the error ends the job, which frees it.
      if (!wide_.empty()) new std::vector<float>(std::move(wide_));  // NOLINT: deliberate leak
      wide_.clear();
      throw;
    }
    finish();
  }
  // Also drives Open MPI's progress (MPI_Request_get_status calls it).
  bool is_completed() override {
    if (done_ || pending_.completed_ns.load() >= 0) return true;
    int flag = 0;
    {
      std::lock_guard<std::mutex> lock(mpi_mutex());
      if (mpi_poisoned()) return false;  // wait() reports it
      MPI_Request_get_status(request_, &flag, MPI_STATUS_IGNORE);
    }
    if (flag != 0) {
      int64_t unseen = -1;
      pending_.completed_ns.compare_exchange_strong(unseen, mpi_now_ns());
    }
    return flag != 0;
  }
  int64_t completed_ns() const override { return pending_.completed_ns.load(); }

 private:
  void finish() {
    finish_reduction(data_, count_, type_, op_, world_, wide_.empty() ? nullptr : &wide_);
  }

  void* data_;
  size_t count_;
  DataType type_;
  ReduceOp op_;
  int world_;
  std::chrono::seconds timeout_;
  std::vector<float> wide_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  MpiPending pending_;  // request_ as the progress thread sees it
  bool done_ = false;
};

// A started all_gather or reduce_scatter (out of place): `in`/`out` are f32
// staging copies of 16-bit data (MPI has no 16-bit float type), `finish`
// runs once after completion (widened results converted back, mean divided).
// Its life-cycle is MpiAllReduceWork's: the progress thread tests the
// request until wait(), a timeout poisons MPI and leaks the staging.
class MpiCollectiveWork final : public Work {
 public:
  MpiCollectiveWork(const char* what, std::chrono::seconds timeout)
      : what_(what), timeout_(timeout) {}
  ~MpiCollectiveWork() override {
    mpi_progress_remove(&pending_);
    if (!done_ && request_ != MPI_REQUEST_NULL) {
      try {
        wait();
      } catch (...) {
      }
    }
  }
  // Issues `call` (an MPI_I* collective writing request) under mpi_mutex().
  void start(const std::function<int(MPI_Request*)>& call) {
    {
      std::lock_guard<std::mutex> lock(mpi_mutex());
      mpi_check_usable(what_);
      mpi_check(call(&request_), what_);
    }
    pending_.request = &request_;
    mpi_progress_add(&pending_);
  }
  void wait() override {
    if (done_) return;
    done_ = true;
    mpi_progress_remove(&pending_);
    try {
      if (request_ != MPI_REQUEST_NULL) mpi_wait(request_, timeout_, what_);
      int64_t unseen = -1;
      pending_.completed_ns.compare_exchange_strong(unseen, mpi_now_ns());
    } catch (...) {  // MPI may still write the staging: leaked on purpose (see all_reduce)
      if (!in.empty()) new std::vector<float>(std::move(in));    // NOLINT: deliberate leak
      if (!out.empty()) new std::vector<float>(std::move(out));  // NOLINT: deliberate leak
      throw;
    }
    if (finish) finish();
  }
  bool is_completed() override {
    if (done_ || pending_.completed_ns.load() >= 0) return true;
    int flag = 0;
    {
      std::lock_guard<std::mutex> lock(mpi_mutex());
      if (mpi_poisoned()) return false;
      MPI_Request_get_status(request_, &flag, MPI_STATUS_IGNORE);
    }
    if (flag != 0) {
      int64_t unseen = -1;
      pending_.completed_ns.compare_exchange_strong(unseen, mpi_now_ns());
    }
    return flag != 0;
  }
  int64_t completed_ns() const override { return pending_.completed_ns.load(); }

  std::vector<float> in, out;
  std::function<void()> finish;

 private:
  const char* what_;
  std::chrono::seconds timeout_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  MpiPending pending_;
  bool done_ = false;
};

// The f32 copy of `count` 16-bit floats.
std::vector<float> mpi_widen(const void* data, size_t count, DataType type) {
  std::vector<float> wide(count);
  const auto* h = static_cast<const uint16_t*>(data);
  for (size_t i = 0; i < count; ++i)
    wide[i] = type == DataType::bf16 ? bf16_to_float(h[i]) : f16_to_float(h[i]);
  return wide;
}

// reduce_scatter's finish: mean divides; 16-bit results are rounded back.
void mpi_finish_reduce_scatter(MpiCollectiveWork& w, void* recv, size_t count, DataType type,
                               ReduceOp op, int world) {
  const bool half = type == DataType::bf16 || type == DataType::f16;
  finish_reduction(recv, count, type, op, world, half ? &w.out : nullptr);
}

class MpiProcessGroup final : public ProcessGroup {
 public:
  // A group over `comm` (MPI_COMM_WORLD, or a duplicate this group frees).
  MpiProcessGroup(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiProcessGroup() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owned_ && !finalized) MPI_Comm_free(&comm_);
  }
  std::unique_ptr<ProcessGroup> duplicate() override {
    MPI_Comm dup;
    {
      std::lock_guard<std::mutex> lock(mpi_mutex());
      mpi_check(MPI_Comm_dup(comm_, &dup), "MPI_Comm_dup");
    }
    auto group = std::make_unique<MpiProcessGroup>(dup, true);
    group->set_timeout(timeout());
    return group;
  }
  int rank() const override { return rank_; }
  int world_size() const override { return size_; }
  std::string_view backend_name() const override { return "mpi"; }
  [[noreturn]] void abort(int code) override {
    std::cerr.flush();
    // MPI_Abort asks mpirun to kill the job and may never return when the
    // network to the other hosts is down (it waits on their daemons): this
    // rank then ends on its own after kAbortGraceSeconds.
    std::thread([code] {
      std::this_thread::sleep_for(std::chrono::seconds(kAbortGraceSeconds));
      std::_Exit(code);
    }).detach();
    MPI_Abort(comm_, code);
    std::_Exit(code);
  }
  static constexpr int kAbortGraceSeconds = 3;

 protected:
  std::unique_ptr<Work> start_all_reduce(void* data, size_t count, DataType type,
                                         ReduceOp op) override {
    LOOM_CHECK(count <= static_cast<size_t>(INT32_MAX), "[dist] all_reduce of ", count,
               " elements is over MPI's int count limit");
    return std::make_unique<MpiAllReduceWork>(comm_, data, count, type, op, size_, timeout());
  }
  std::unique_ptr<Work> start_all_gather(const void* send, void* recv, size_t nbytes) override {
    LOOM_CHECK(nbytes <= static_cast<size_t>(INT32_MAX), "[dist] all_gather of ", nbytes,
               " bytes is over MPI's int count limit");
    auto w = std::make_unique<MpiCollectiveWork>("all_gather", timeout());
    const int n = static_cast<int>(nbytes);
    w->start([&](MPI_Request* r) {
      return MPI_Iallgather(send, n, MPI_BYTE, recv, n, MPI_BYTE, comm_, r);
    });
    return w;
  }
  std::unique_ptr<Work> start_reduce_scatter(const void* send, void* recv, size_t count,
                                             DataType type, ReduceOp op) override {
    LOOM_CHECK(count * static_cast<size_t>(size_) <= static_cast<size_t>(INT32_MAX),
               "[dist] reduce_scatter of ", count, " x ", size_,
               " elements is over MPI's int count limit");
    auto w = std::make_unique<MpiCollectiveWork>("reduce_scatter", timeout());
    const void* in = send;
    void* out = recv;
    if (type == DataType::bf16 || type == DataType::f16) {
      w->in = mpi_widen(send, count * static_cast<size_t>(size_), type);
      w->out.resize(count);
      in = w->in.data();
      out = w->out.data();
    }
    MpiCollectiveWork* self = w.get();
    const int world = size_;
    w->finish = [self, recv, count, type, op, world] {
      mpi_finish_reduce_scatter(*self, recv, count, type, op, world);
    };
    w->start([&](MPI_Request* r) {
      return MPI_Ireduce_scatter_block(in, out, static_cast<int>(count), mpi_type(type), MPI_SUM,
                                       comm_, r);
    });
    return w;
  }
  void do_broadcast(void* data, size_t nbytes, int root) override {
    LOOM_CHECK(nbytes <= static_cast<size_t>(INT32_MAX), "[dist] broadcast of ", nbytes,
               " bytes is over MPI's int count limit");
    MPI_Request r;
    {
      std::lock_guard<std::mutex> lock(mpi_mutex());
      mpi_check_usable("broadcast");
      mpi_check(MPI_Ibcast(data, static_cast<int>(nbytes), MPI_BYTE, root, comm_, &r), "broadcast");
    }
    mpi_wait(r, timeout(), "broadcast");
  }
  std::vector<uint8_t> do_all_gather(const std::vector<uint8_t>& bytes) override {
    std::vector<uint8_t> out(bytes.size() * static_cast<size_t>(size_));
    MPI_Request r;
    {
      std::lock_guard<std::mutex> lock(mpi_mutex());
      mpi_check_usable("all_gather");
      mpi_check(MPI_Iallgather(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, out.data(),
                               static_cast<int>(bytes.size()), MPI_BYTE, comm_, &r),
                "all_gather");
    }
    mpi_wait(r, timeout(), "all_gather");
    return out;
  }
  void do_barrier() override {
    MPI_Request r;
    {
      std::lock_guard<std::mutex> lock(mpi_mutex());
      mpi_check_usable("barrier");
      mpi_check(MPI_Ibarrier(comm_, &r), "barrier");
    }
    mpi_wait(r, timeout(), "barrier");
  }

 private:
  MPI_Comm comm_;
  bool owned_;
  int rank_ = 0;
  int size_ = 1;
};

// MPI_Init_thread unless MPI is already up (a host program initialized it).
void mpi_init_once() {
  int inited = 0;
  MPI_Initialized(&inited);
  if (inited) return;
  int provided = 0;
  mpi_check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
  g_mpi_initialized_here = true;
  LOOM_CHECK(provided >= MPI_THREAD_SERIALIZED, "[dist] mpi: the MPI library gives thread level ",
             provided, " (needs MPI_THREAD_SERIALIZED or more)");
}

// Fills mpi_hosts() once: every rank's host name (64 bytes each), gathered
// with the default timeout like any collective.
void mpi_gather_hosts() {
  if (!mpi_hosts().empty()) return;
  constexpr size_t kLen = 64;
  std::string mine = host_name();
  mine.resize(kLen - 1);
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<char> all(kLen * static_cast<size_t>(size));
  MPI_Request r;
  {
    std::lock_guard<std::mutex> lock(mpi_mutex());
    mpi_check(MPI_Iallgather(mine.c_str(), kLen, MPI_CHAR, all.data(), kLen, MPI_CHAR,
                             MPI_COMM_WORLD, &r),
              "all_gather of host names");
  }
  mpi_wait(r, std::chrono::seconds(1800), "all_gather of host names");
  for (int i = 0; i < size; ++i) mpi_hosts().emplace_back(all.data() + kLen * i);
}

}  // namespace

std::unique_ptr<ProcessGroup> make_mpi_process_group() {
  mpi_init_once();
  mpi_gather_hosts();
  return std::make_unique<MpiProcessGroup>(MPI_COMM_WORLD, false);
}

void finalize_mpi() {
  mpi_progress_stop();  // no MPI_Test after MPI_Finalize
  if (!g_mpi_initialized_here) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
  g_mpi_initialized_here = false;
}

#else  // built without MPI

std::unique_ptr<ProcessGroup> make_mpi_process_group() {
  fail("[dist] ddp_backend mpi: loom was built without MPI (install libopenmpi-dev and rebuild)");
}

void finalize_mpi() {}

#endif

}  // namespace loom::dist
