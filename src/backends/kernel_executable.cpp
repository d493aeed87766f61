// The kernel-table pair (kernel_backend.h, kernel_executable.h).
// KernelExecutable::run binds buffers from the memory plan (arena offsets,
// donated inputs, fresh outputs) and launches the steps in order; a
// collective's step starts it and its wait is enqueued before its first
// reader. At the end, KernelBackend's defaults: capabilities from the
// kernel table, compile into a KernelExecutable after checking every op has
// a kernel, one op through its kernel, fused groups evaluated op by op.
#include "backends/kernel_executable.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>

#include "backends/all_reduce_kernel.h"
#include "core/settings.h"
#include "loom/dist.h"
#include "loom/error.h"
#include "loom/metrics.h"
#include "loom/shape.h"
#include "ops/op_kind.h"

namespace loom::backends {

using compiler::memory::Placement;

namespace {

// The arena of a backend's executables: one block, grown to the largest
// plan, shared by every executable of that backend. Runs that use it hold
// its lock, so two executables never overlap in it; a program's arena holds
// only values that die inside one run, so sharing cannot clobber a result.
// (One block per executable made memory grow with the number of distinct
// graphs: accumulation's three micro-step graphs held three arenas.)
struct SharedArena {
  std::mutex mu;
  BufferPtr block;
  size_t bytes = 0;
};

// LOOM_KERNEL_TIMES=1 (the step benches' roofline, bench/roofline.h): each
// kernel's wall time goes to the timer "KernelTime.<op>" ("fused" for a
// fused group, "fused_batch" for a batch of them) and the bytes its
// operands and results hold to the counter "KernelBytes.<op>". =2 also
// times each step under "KernelDetail.<label>" (step_label: the op and its
// result shape, a fused group's body ops), for finding which group of a
// step costs what (with LOOM_FUSED_BATCH=0 every group is its own step).
// Read when an executable is built (compiled), so a cached executable keeps
// its choice. Returns the level: 0, 1 or 2.
int kernel_times_wanted() { return static_cast<int>(settings::integer(Setting::kernel_times)); }
// "KernelDetail.<op>[shape]" for a kernel; "KernelDetail.fused{op op ...}[shape]"
// (reduction last) for a fused group.
std::string step_label(const compiler::Step& step) {
  if (!step.fused)
    return "KernelDetail." + std::string(ops::op_name(step.instr.op)) +
           to_string(step.instr.type.shape);
  std::string s = "KernelDetail.fused{";
  for (size_t i = 0; i < step.group.body.size(); ++i)
    s += (i ? " " : "") + std::string(ops::op_name(step.group.body[i].op));
  if (step.group.has_reduce) s += " " + std::string(ops::op_name(step.group.reduce.op));
  return s + "}" + to_string(step.group.shape);
}
constexpr int kFusedKernel = ops::kNumOps, kFusedBatchKernel = ops::kNumOps + 1;
struct KernelMetricNames {
  std::string time, bytes;
};
// `kind`: an OpKind's index, kFusedKernel or kFusedBatchKernel.
const KernelMetricNames& kernel_metric_names(int kind) {
  static const std::vector<KernelMetricNames>* names = [] {
    auto* v = new std::vector<KernelMetricNames>;
    for (int i = 0; i < ops::kNumOps + 2; ++i) {
      std::string n = i == kFusedKernel ? "fused"
                      : i == kFusedBatchKernel
                          ? "fused_batch"
                          : std::string(ops::op_name(static_cast<ops::OpKind>(i)));
      v->push_back({"KernelTime." + n, "KernelBytes." + n});
    }
    return v;
  }();
  return (*names)[kind];
}
// `work`, timed when `on`; `bytes`: what it reads and writes; `detail`
// (may be null or empty): a second timer name for the same time.
std::function<void()> timed_kernel(bool on, int kind, int64_t bytes, std::function<void()> work,
                                   const std::string* detail = nullptr) {
  if (!on) return work;
  return [kind, bytes, work = std::move(work), detail] {
    auto t0 = std::chrono::steady_clock::now();
    work();
    auto dt = std::chrono::steady_clock::now() - t0;
    int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(dt).count();
    const KernelMetricNames& n = kernel_metric_names(kind);
    metrics::add_time(n.time, ns);
    metrics::add_counter(n.bytes, bytes);
    if (detail != nullptr && !detail->empty()) metrics::add_time(*detail, ns);
  };
}
// The bytes of a step's operands and results (0 unless `on`). An
// index_copy whose output is its self's buffer (planned in place or
// donated) reads the index and the source and writes the source's bytes
// into it: self's other slices are not touched.
int64_t step_bytes(bool on, const ir::Graph& g, const compiler::Step& step,
                   const std::vector<void*>* ptr = nullptr) {
  if (!on) return 0;
  if (ptr != nullptr && !step.fused && step.instr.op == ops::OpKind::k_index_copy &&
      (*ptr)[step.outputs[0]] == (*ptr)[step.inputs[0]])
    return static_cast<int64_t>(g.type_of(step.inputs[1]).nbytes() +
                                2 * g.type_of(step.inputs[2]).nbytes());
  int64_t bytes = 0;
  for (const std::vector<int>* vs : {&step.inputs, &step.outputs})
    for (int v : *vs) bytes += static_cast<int64_t>(g.type_of(v).nbytes());
  return bytes;
}

// Never destroyed: a job still queued at exit may run after static
// destructors (see lazy/graph_executor.cpp's state()).
std::mutex& arenas_mutex() {
  static auto* mu = new std::mutex;
  return *mu;
}
std::map<const Backend*, std::unique_ptr<SharedArena>>& arenas() {
  static auto* map = new std::map<const Backend*, std::unique_ptr<SharedArena>>;
  return *map;
}

// LOOM_DDP_OVERLAP=0 waits for each collective right after its start.
bool executable_overlap_wanted() { return settings::flag(Setting::ddp_overlap); }

// Waits for (destroys) every collective still started when a run ends,
// also by an exception, before the run's buffers and arena lock go.
struct ExecutableWorkDrain {
  const Backend& backend;
  std::vector<std::unique_ptr<dist::Work>>& work;
  ~ExecutableWorkDrain() {
    try {
      backend.stream().synchronize();  // nothing of this run still queued
    } catch (...) {                    // reported by run() already, or lost with the run's failure
    }
    for (auto& w : work) w.reset();  // an unwaited Work waits in its destructor
  }
};

// A run that failed while a collective may still be in flight (a timed-out
// wait: MPI cannot cancel a collective, and a started MPI_Iallgather /
// MPI_Ireduce_scatter may still write its output or read its operand until
// the job ends): its arena block and every buffer the run bound are kept
// alive for good, and the shared arena gets a fresh block at the next run,
// so no later run or tensor reuses bytes MPI may still write. The error
// normally ends the job; a program that catches it only loses the memory.
// `shared` is the arena `arena` came from (nullptr without one); the caller
// holds its mu.
void retire_run_buffers(SharedArena* shared, BufferPtr arena, std::vector<BufferPtr> own) {
  if (shared != nullptr && shared->block == arena) {
    shared->block.reset();
    shared->bytes = 0;
  }
  if (arena) own.push_back(std::move(arena));
  // Reachable from a static (LeakSanitizer does not report them), never freed.
  static auto* retired = new std::vector<BufferPtr>;
  int64_t bytes = 0;
  std::lock_guard<std::mutex> lock(arenas_mutex());
  for (BufferPtr& b : own) {
    if (!b) continue;
    bytes += static_cast<int64_t>(b->nbytes());
    retired->push_back(std::move(b));
  }
  metrics::add_counter("RetiredAfterFailedCollectiveBytes", bytes);
}

SharedArena& arena_of(const Backend& backend) {
  std::lock_guard<std::mutex> lock(arenas_mutex());
  std::unique_ptr<SharedArena>& a = arenas()[&backend];
  if (!a) a = std::make_unique<SharedArena>();
  return *a;
}

FusedCall fused_call(const ir::Graph& g, const compiler::Step& step,
                     const std::vector<void*>& ptr) {
  FusedCall call{&step.group, {}, {}};
  for (int v : step.inputs) call.inputs.push_back({ptr[v], g.type_of(v)});
  for (int v : step.outputs) call.outputs.push_back({ptr[v], g.type_of(v)});
  return call;
}

}  // namespace

void release_shared_arenas() {
  std::lock_guard<std::mutex> lock(arenas_mutex());
  for (auto& [backend, arena] : arenas()) {
    std::lock_guard<std::mutex> arena_lock(arena->mu);
    arena->block.reset();
    arena->bytes = 0;
  }
}

KernelExecutable::KernelExecutable(const KernelBackend& backend,
                                   std::shared_ptr<const compiler::Program> program)
    : Executable(backend, std::move(program)),
      backend_(backend),
      plan_(compiler::memory::plan_memory(*program_)) {
  for (Placement p : plan_.placement) needs_arena_ = needs_arena_ || p == Placement::arena;
  skip_.assign(program_->steps.size(), false);
  for (int s : plan_.alias_steps) skip_[s] = true;
  batch_.assign(program_->steps.size(), 1);
  if (compiler::memory::fused_batches_enabled())
    batch_ = compiler::memory::plan_fused_batches(*program_, plan_);
  batch_calls_.resize(program_->steps.size());
  plan_collective_waits();
  int level = kernel_times_wanted();
  kernel_times_ = level > 0;
  if (level == 2) {
    step_labels_.resize(program_->steps.size());
    for (size_t i = 0; i < program_->steps.size(); ++i)
      step_labels_[i] = step_label(program_->steps[i]);
  }
}

KernelExecutable::~KernelExecutable() = default;

MemoryReport KernelExecutable::memory_report() const {
  auto i64 = [](size_t v) { return static_cast<int64_t>(v); };
  const compiler::memory::MemoryPlan& m = plan_;
  return {
      {{"planned_peak_bytes", i64(m.planned_peak_bytes())},
       {"arena_bytes", i64(m.arena_bytes)},
       {"output_bytes", i64(m.output_bytes)},
       {"donated_bytes", i64(m.donated_bytes)},
       {"in_place", i64(m.in_place.size())},
       {"steps", i64(program_->steps.size())}},
      "planned peak " + std::to_string(m.planned_peak_bytes()) + " bytes (" + m.summary() + ")"};
}

void KernelExecutable::plan_collective_waits() {
  const std::vector<compiler::Step>& steps = program_->steps;
  const int n = static_cast<int>(steps.size());
  collective_.assign(n, false);
  wait_before_.assign(n + 1, {});
  // Blocking: start and wait in one stream item. Two items would let the
  // stream go idle in between (its queue can run dry before the next item is
  // enqueued), and a sim stream going idle makes its memory PROT_NONE while
  // MPI's progress thread may still write the reduction into it.
  const bool overlap = executable_overlap_wanted() && backend_.host_visible();
  blocking_collectives_ = !overlap;
  for (int s = 0; s < n; ++s) {
    if (!compiler::is_collective_step(steps[s])) continue;
    collective_[s] = true;
    if (blocking_collectives_) continue;  // waited inside its own step
    // The plan keeps the operands live until this wait (plan.cpp).
    const bool in_arena = plan_.placement[steps[s].outputs[0]] == Placement::arena;
    wait_before_[compiler::collective_wait_step(*program_, s, in_arena)].push_back(s);
  }
  // A wait before a member of a fused batch moves to the batch's head, where
  // the whole batch launches as one call.
  for (int s = 0; s < n; ++s)
    for (int t = s + 1; t < s + batch_[s]; ++t) {
      wait_before_[s].insert(wait_before_[s].end(), wait_before_[t].begin(), wait_before_[t].end());
      wait_before_[t].clear();
    }
}

void KernelExecutable::launch_steps() {
  const std::vector<compiler::Step>& steps = program_->steps;
  Stream& stream = backend_.stream();
  const size_t n = steps.size();
  size_t started = 0;  // caller side: collectives started and not yet waited
  for (size_t s = 0; s <= n; ++s) {
    started -= wait_before_[s].size();
    for (int c : wait_before_[s])
      stream.enqueue([this, c] {
        std::unique_ptr<dist::Work> w = std::move(work_[c]);
        in_flight_.erase(std::remove(in_flight_.begin(), in_flight_.end(), c), in_flight_.end());
        if (w) w->wait();
      });
    if (s == n || skip_[s] || batch_[s] == 0) continue;  // 0: launched with its batch
    if (batch_[s] >= 2) {
      launch_batch(s, batch_[s], ptr_);
    } else if (!collective_[s]) {
      launch(steps[s], ptr_);
    } else if (blocking_collectives_) {
      stream.enqueue([this, s] { start_collective(program_->steps[s], ptr_)->wait(); });
    } else {
      stream.enqueue([this, s] {
        work_[s] = start_collective(program_->steps[s], ptr_);
        in_flight_.push_back(static_cast<int>(s));
      });
      ++started;
    }
    if (started > 0)  // progress between kernels (MPI_Request_get_status)
      stream.enqueue([this] {
        for (int c : in_flight_)
          if (work_[c]) work_[c]->is_completed();
      });
  }
}

void KernelExecutable::bind_outputs(std::vector<BufferPtr>& own,
                                    const std::vector<bool>& donatable) {
  const ir::Graph& g = program_->graph;
  for (int v = 0; v < g.num_values(); ++v) {
    if (plan_.placement[v] != Placement::output) continue;
    int d = plan_.donor[v];
    size_t nbytes = g.type_of(v).nbytes();
    if (d >= 0 && donatable[d] && own[d].use_count() == 1) {
      own[v] = own[d];
      metrics::add_counter("DonatedBytes", static_cast<int64_t>(nbytes));
      continue;
    }
    if (d >= 0) {
      metrics::add_counter("DonationVetoed");
      if (settings::integer(Setting::debug) == 2)  // say which donation and why
        std::fprintf(
            stderr, "[loom]   donation vetoed: output %%%d %s from input %%%d (%s)\n", v,
            ops::to_string(g.type_of(v)).c_str(), d,
            donatable[d] ? "its buffer is held elsewhere" : "its tensor is still referenced");
    }
    own[v] = backend_.allocate(nbytes);
    metrics::add_counter("OutputAllocatedBytes", static_cast<int64_t>(nbytes));
  }
}

std::vector<BufferPtr> KernelExecutable::run(std::vector<BufferPtr> inputs,
                                             const std::vector<bool>& donatable) {
  std::lock_guard<std::mutex> lock(mu_);
  const ir::Graph& g = program_->graph;
  std::unique_lock<std::mutex> arena_lock;
  BufferPtr arena;  // held for the run, even if a larger plan replaces the block later
  SharedArena* shared_arena = nullptr;
  if (needs_arena_) {
    shared_arena = &arena_of(backend_);
    SharedArena& shared = *shared_arena;
    arena_lock = std::unique_lock<std::mutex>(shared.mu);
    if (!shared.block || shared.bytes < plan_.arena_bytes) {
      shared.block.reset();  // freed before the larger block is allocated
      shared.block = backend_.allocate(plan_.arena_bytes);
      shared.bytes = plan_.arena_bytes;
      metrics::add_counter("ArenaAllocatedBytes", static_cast<int64_t>(plan_.arena_bytes));
    }
    arena = shared.block;
  }
  std::vector<BufferPtr> own(g.num_values());
  for (size_t i = 0; i < inputs.size(); ++i) own[i] = std::move(inputs[i]);
  bind_outputs(own, donatable);
  ptr_.assign(g.num_values(), nullptr);
  auto* base = arena ? static_cast<std::byte*>(arena->data()) : nullptr;
  for (int v = 0; v < g.num_values(); ++v) {
    if (plan_.placement[v] == Placement::arena)
      ptr_[v] = base + plan_.offset[v];
    else if (own[v])
      ptr_[v] = own[v]->data();
  }
  work_.clear();
  work_.resize(program_->steps.size());
  in_flight_.clear();
  try {
    ExecutableWorkDrain drain{backend_, work_};
    launch_steps();
    backend_.stream().synchronize();
  } catch (...) {
    if (std::find(collective_.begin(), collective_.end(), true) != collective_.end())
      retire_run_buffers(shared_arena, std::move(arena), std::move(own));
    throw;
  }
  std::vector<BufferPtr> outputs;
  outputs.reserve(g.outputs.size());
  for (int v : g.outputs) outputs.push_back(own[v]);
  return outputs;
}

void KernelExecutable::launch(const compiler::Step& step, const std::vector<void*>& ptr) {
  const ir::Graph& g = program_->graph;
  const KernelBackend& b = backend_;
  if (!step.fused) {
    OpCall call{step.instr.op, &step.instr.attrs, {}, {}};
    for (int a : step.inputs) call.inputs.push_back({ptr[a], g.type_of(a)});
    call.output = {ptr[step.outputs[0]], step.instr.type};
    b.stream().enqueue(timed_kernel(
        kernel_times_, static_cast<int>(step.instr.op), step_bytes(kernel_times_, g, step, &ptr),
        [&b, call] { b.run(call); }, step_label_of(step)));
    return;
  }
  FusedCall call = fused_call(g, step, ptr);
  b.stream().enqueue(timed_kernel(
      kernel_times_, kFusedKernel, step_bytes(kernel_times_, g, step),
      [&b, call] { b.run_fused(call); }, step_label_of(step)));
}

const std::string* KernelExecutable::step_label_of(const compiler::Step& step) const {
  if (step_labels_.empty()) return nullptr;
  return &step_labels_[static_cast<size_t>(&step - program_->steps.data())];
}

const std::string* KernelExecutable::batch_label_of(size_t first, int count) {
  if (step_labels_.empty()) return nullptr;
  std::string& label = batch_labels_[first];
  if (label.empty()) {
    label = "KernelDetail.batch of " + std::to_string(count) + ":";
    for (int k = 0; k < count && k < 3; ++k)
      label += " " + step_labels_[first + k].substr(std::strlen("KernelDetail."));
    if (count > 3) label += " ...";
  }
  return &label;
}

std::unique_ptr<dist::Work> KernelExecutable::start_collective(const compiler::Step& step,
                                                               const std::vector<void*>& ptr) {
  const ir::Graph& g = program_->graph;
  OpCall call{step.instr.op, &step.instr.attrs, {}, {}};
  for (int a : step.inputs) call.inputs.push_back({ptr[a], g.type_of(a)});
  call.output = {ptr[step.outputs[0]], step.instr.type};
  return start_collective_kernel(call);
}

void KernelExecutable::launch_batch(size_t first, int count, const std::vector<void*>& ptr) {
  const ir::Graph& g = program_->graph;
  const KernelBackend& b = backend_;
  // Kept with the executable and refilled (same capacities) every run: no
  // allocation per step. The stream is synchronized before run() returns.
  std::vector<FusedCall>& calls = batch_calls_[first];
  calls.resize(count);
  for (int k = 0; k < count; ++k) {
    const compiler::Step& step = program_->steps[first + k];
    FusedCall& c = calls[k];
    c.group = &step.group;
    c.inputs.clear();
    c.outputs.clear();
    for (int v : step.inputs) c.inputs.push_back({ptr[v], g.type_of(v)});
    for (int v : step.outputs) c.outputs.push_back({ptr[v], g.type_of(v)});
  }
  metrics::add_counter("FusedBatchLaunches");
  const std::vector<FusedCall>* list = &calls;
  int64_t bytes = 0;
  for (int k = 0; k < count; ++k) bytes += step_bytes(kernel_times_, g, program_->steps[first + k]);
  b.stream().enqueue(timed_kernel(
      kernel_times_, kFusedBatchKernel, bytes, [&b, list] { b.run_fused_batch(*list); },
      batch_label_of(first, count)));
}

}  // namespace loom::backends

namespace loom::backends {

Capabilities KernelBackend::capabilities() const {
  Capabilities c;
  for (int i = 0; i < ops::kNumOps; ++i)
    if (kernel(static_cast<ops::OpKind>(i))) c.ops.set(static_cast<size_t>(i));
  return c;
}

std::shared_ptr<Executable> KernelBackend::compile(
    std::shared_ptr<const compiler::Program> p) const {
  return compile_kernels(std::move(p));
}

std::shared_ptr<KernelExecutable> KernelBackend::compile_kernels(
    std::shared_ptr<const compiler::Program> p) const {
  auto check = [this](ops::OpKind op) {
    LOOM_CHECK(supports(op), "[", ops::op_name(op), "] not supported by backend ", name());
  };
  for (const compiler::Step& step : p->steps) {
    if (!step.fused) {
      check(step.instr.op);
      continue;
    }
    for (const compiler::FusedOp& op : step.group.body) check(op.op);
    if (step.group.has_reduce) check(step.group.reduce.op);
  }
  return std::make_shared<KernelExecutable>(*this, std::move(p));
}

void KernelBackend::run(const OpCall& call) const {
  Kernel k = kernel(call.op);
  LOOM_CHECK(k != nullptr, "[", ops::op_name(call.op), "] not supported by backend ", name());
  k(call);
}

void KernelBackend::run_fused(const FusedCall& call) const {
  const compiler::FusedGroup& g = *call.group;
  std::vector<std::vector<std::byte>> temps(g.body.size());
  std::vector<ConstView> values(call.inputs);
  for (size_t k = 0; k < g.body.size(); ++k) {
    const compiler::FusedOp& op = g.body[k];
    temps[k].resize(op.type.nbytes());
    OpCall c{op.op, &op.attrs, {}, {temps[k].data(), op.type}};
    for (int a : op.args) c.inputs.push_back(values[a]);
    run(c);
    values.push_back({temps[k].data(), op.type});
  }
  if (g.has_reduce) {  // reads the temporaries only, so it may run first
    const compiler::FusedReduce& r = g.reduce;
    run(OpCall{r.op, &r.attrs, {values[g.num_inputs() + r.arg]}, call.outputs.back()});
  }
  for (size_t o = 0; o < g.outputs.size(); ++o) {
    const auto& t = temps[g.outputs[o]];
    std::copy(t.begin(), t.end(), static_cast<std::byte*>(call.outputs[o].data));
  }
}

void KernelBackend::run_fused_batch(const std::vector<FusedCall>& calls) const {
  for (const FusedCall& call : calls) run_fused(call);
}

}  // namespace loom::backends
