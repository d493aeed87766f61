// loom_dist_worker: the program the multi-rank tests start under mpirun
// (tests/distributed/CMakeLists via the root CMakeLists; mpi_case.sh checks its
// exit code, run time and output). One scenario per first argument:
//   collectives   every ProcessGroup collective and the all_reduce op (eager,
//                 lazy, gradient) against values computed here, and an async
//                 all_reduce completing with no MPI call from this thread
//                 (the progress thread), 100 lazy:sim all_reduce steps (no
//                 idle sim stream while one is in flight), the buffer and op
//                 forms of all_gather / reduce_scatter (every dtype, sum and
//                 mean, eager / lazy / sim, both gradients); prints "ok"
//   throw         rank 1 throws a loom::Error while the others wait in a
//                 barrier: the job must end non-zero with "[rank 1] ..."
//   kill          rank 1 SIGKILLs itself while the others wait in an all_reduce
//   timeout       rank 1 never joins; the others' barrier times out (2 s)
//   graph_timeout the same for an all_reduce op in a lazy step (a step run on
//                 one rank only, as a save guarded by a per-rank condition):
//                 the executor's timeout must reach the main thread and end the job
//   mismatch      rank 1 has a different parameter list: check_same_on_all_ranks
//                 must throw naming rank 1 and the first differing item
// Uses only the public API. Exit 0 when the scenario's checks pass.
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "loom/collective.h"
#include "loom/dist.h"
#include "loom/error.h"
#include "loom/lazy.h"
#include "loom/metrics.h"
#include "loom/ops.h"
#include "loom/tensor.h"

namespace {

using loom::dist::DataType;
using loom::dist::ReduceOp;

int g_failures = 0;

void expect_near(double got, double want, const std::string& what) {
  double tol = 1e-6 * std::max(1.0, std::abs(want));
  if (std::abs(got - want) <= tol) return;
  std::fprintf(stderr, "[rank %d] %s: got %.9g, want %.9g\n", loom::dist::rank(), what.c_str(), got,
               want);
  ++g_failures;
}

// Rank r holds x_i = (r + 1) * (i + 1); the sum over ranks is S * (i + 1)
// with S = n(n+1)/2, the mean S/n * (i + 1), the max n * (i + 1).
void check_buffer_collectives(loom::dist::ProcessGroup& pg) {
  int r = pg.rank(), n = pg.world_size();
  double s = n * (n + 1) / 2.0;
  const size_t count = 37;
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean, ReduceOp::max}) {
    double scale = op == ReduceOp::sum ? s : op == ReduceOp::mean ? s / n : n;
    std::string name = loom::dist::reduce_op_name(op);
    std::vector<float> f(count);
    std::vector<double> d(count);
    std::vector<int64_t> l(count);
    std::vector<uint16_t> b(count);
    for (size_t i = 0; i < count; ++i) {
      f[i] = static_cast<float>((r + 1) * (i + 1));
      d[i] = (r + 1) * (i + 1);
      l[i] = (r + 1) * static_cast<int64_t>(i + 1) * 6;  // mean stays integral for n = 2, 3
      b[i] = loom::float_to_bf16(static_cast<float>((r + 1) * (i % 8 + 1)));
    }
    pg.all_reduce(f.data(), count, DataType::f32, op);
    auto work = pg.all_reduce_async(d.data(), count, DataType::f64, op);
    pg.all_reduce(l.data(), count, DataType::i64, op);
    pg.all_reduce(b.data(), count, DataType::bf16, op);
    work->wait();
    for (size_t i = 0; i < count; ++i) {
      expect_near(f[i], scale * (i + 1), "f32 " + name);
      expect_near(d[i], scale * (i + 1), "f64 async " + name);
      expect_near(static_cast<double>(l[i]), scale * (i + 1) * 6, "i64 " + name);
      double want_b =
          loom::bf16_to_float(loom::float_to_bf16(static_cast<float>(scale * (i % 8 + 1))));
      expect_near(loom::bf16_to_float(b[i]), want_b, "bf16 " + name);
    }
  }
  std::vector<int32_t> v = {r == 1 ? 41 : -1, r == 1 ? 42 : -2};
  pg.broadcast(v.data(), v.size() * sizeof(int32_t), 1);
  expect_near(v[0], 41, "broadcast[0]");
  expect_near(v[1], 42, "broadcast[1]");
  std::vector<uint8_t> mine = {static_cast<uint8_t>(r), static_cast<uint8_t>(10 + r)};
  std::vector<uint8_t> all = pg.all_gather(mine);
  if (all.size() != 2u * n) ++g_failures;
  for (int k = 0; k < n && all.size() == 2u * n; ++k) {
    expect_near(all[2 * k], k, "all_gather rank byte");
    expect_near(all[2 * k + 1], 10 + k, "all_gather second byte");
  }
  pg.barrier();
}

// The all_reduce op on the eager cpu device and on the lazy device (twice:
// the second step must be a cache hit, one all_reduce per step), and its
// gradient: d/dx sum(all_reduce(x) * w_r) = all_reduce(w) (sum).
void check_all_reduce_op(loom::dist::ProcessGroup& pg) {
  int r = pg.rank(), n = pg.world_size();
  double s = n * (n + 1) / 2.0;
  for (const char* dev : {"cpu", "lazy", "lazy:sim"}) {
    for (int step = 0; step < 2; ++step) {
      int64_t count_before = loom::metrics::counter("AllReduceCount");
      loom::Tensor x = loom::tensor({1.f * (r + 1), 2.f * (r + 1), 3.f * (r + 1)}, {3}, dev);
      loom::Tensor sum = loom::all_reduce(x);
      loom::Tensor mean = loom::all_reduce(x, ReduceOp::mean);
      loom::lazy::mark_step();
      std::vector<float> vs = sum.to_vector<float>(), vm = mean.to_vector<float>();
      for (int i = 0; i < 3; ++i) {
        expect_near(vs[i], s * (i + 1), std::string(dev) + " all_reduce sum");
        expect_near(vm[i], s / n * (i + 1), std::string(dev) + " all_reduce mean");
      }
      expect_near(static_cast<double>(loom::metrics::counter("AllReduceCount") - count_before), 2,
                  std::string(dev) + " AllReduceCount per step");
    }
  }
  loom::Tensor x = loom::tensor({1.f, 2.f}, {2}, "lazy");
  x.requires_grad_(true);
  loom::Tensor w = loom::tensor({1.f * (r + 1), -1.f}, {2}, "lazy");
  loom::Tensor loss = loom::sum(loom::all_reduce(x) * w);
  loss.backward();
  std::vector<float> g = x.grad().to_vector<float>();
  expect_near(g[0], s, "gradient of all_reduce sum [0]");
  expect_near(g[1], -n, "gradient of all_reduce sum [1]");
}

// The group's all_gather_async / reduce_scatter_async in every dtype, and the
// all_gather / reduce_scatter ops on every device with their gradients.
// Rank r holds x[k] = (r + 1) * (k + 1) over W * m elements (reduce_scatter)
// or m elements (all_gather).
void check_gather_scatter_buffers(loom::dist::ProcessGroup& pg) {
  const int r = pg.rank(), n = pg.world_size();
  const double s = n * (n + 1) / 2.0;
  const size_t m = 5;
  for (DataType t : {DataType::f32, DataType::f64, DataType::bf16, DataType::f16, DataType::i32,
                     DataType::i64}) {
    const std::string name = loom::dist::data_type_name(t);
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean}) {
      std::vector<double> in(m * n), out(m);
      for (size_t k = 0; k < in.size(); ++k) in[k] = (r + 1) * double(k + 1);
      loom::DType dt = t == DataType::f32    ? loom::DType::f32
                       : t == DataType::bf16 ? loom::DType::bf16
                       : t == DataType::f16  ? loom::DType::f16
                       : t == DataType::i32  ? loom::DType::i32
                       : t == DataType::i64  ? loom::DType::i64
                                             : loom::DType::f32;
      if (t == DataType::f64) {  // no loom dtype: the raw buffer form only
        pg.reduce_scatter_async(in.data(), out.data(), m, t, op)->wait();
      } else {
        std::vector<float> fin(in.begin(), in.end());
        loom::Tensor x = loom::tensor(fin, {static_cast<int64_t>(in.size())}).to(dt);
        std::vector<uint8_t> buf(m * loom::dtype_size(dt));
        pg.reduce_scatter_async(x.data(), buf.data(), m, t, op)->wait();
        loom::Tensor y = loom::from_blob(buf.data(), {static_cast<int64_t>(m)}, dt);
        std::vector<double> v = y.to(loom::DType::f32).to_vector<double>();
        out.assign(v.begin(), v.end());
      }
      for (size_t k = 0; k < m; ++k) {
        double want = s * double(r * m + k + 1) / (op == ReduceOp::mean ? n : 1);
        if (t == DataType::i32 || t == DataType::i64) want = std::trunc(want);
        if (t == DataType::bf16 || t == DataType::f16)
          want = loom::tensor({float(want)}, {1}).to(dt).to(loom::DType::f32).item();
        expect_near(out[k], want, "reduce_scatter " + name + " " + reduce_op_name(op));
      }
    }
  }
  std::vector<int32_t> mine(m), all(m * n);
  for (size_t k = 0; k < m; ++k) mine[k] = 100 * r + int32_t(k);
  pg.all_gather_async(mine.data(), all.data(), m * sizeof(int32_t))->wait();
  for (int q = 0; q < n; ++q)
    for (size_t k = 0; k < m; ++k) expect_near(all[q * m + k], 100 * q + k, "all_gather buffer");
}

// The ops: on cpu, lazy and lazy:sim, all_gather then reduce_scatter(mean)
// returns each rank's own x (every rank gathered the same rows, so block r
// of their mean is x_r) and reduce_scatter(sum) W * x_r; and the gradients:
// d/dx sum(all_gather(x) * w_r) = sum_q w_q[block r] (reduce_scatter sum);
// d/dx sum(reduce_scatter(x) * w_r) = stacked w (all_gather).
void check_gather_scatter_ops(loom::dist::ProcessGroup& pg) {
  const int r = pg.rank(), n = pg.world_size();
  for (const char* dev : {"cpu", "lazy", "lazy:sim"}) {
    for (int step = 0; step < 2; ++step) {
      loom::Tensor x = loom::tensor({1.f * (r + 1), 2.f * (r + 1)}, {1, 2}, dev);
      loom::Tensor g = loom::all_gather(x);                         // [n, 2]
      loom::Tensor back = loom::reduce_scatter(g, ReduceOp::mean);  // [1, 2] = x
      loom::Tensor sum = loom::reduce_scatter(g, ReduceOp::sum);    // n * x
      loom::lazy::mark_step();
      std::vector<float> vg = g.to_vector<float>(), vb = back.to_vector<float>(),
                         vs = sum.to_vector<float>();
      if (vg.size() != size_t(2 * n)) ++g_failures;
      for (int q = 0; q < n && vg.size() == size_t(2 * n); ++q) {
        expect_near(vg[2 * q], q + 1, std::string(dev) + " all_gather op [q, 0]");
        expect_near(vg[2 * q + 1], 2 * (q + 1), std::string(dev) + " all_gather op [q, 1]");
      }
      expect_near(vb[1], 2 * (r + 1), std::string(dev) + " reduce_scatter mean op");
      expect_near(vs[0], n * (r + 1), std::string(dev) + " reduce_scatter sum op");
    }
  }
  loom::Tensor x = loom::tensor({1.f, 2.f}, {1, 2}, "lazy");
  x.requires_grad_(true);
  std::vector<float> w(2 * n);
  for (int k = 0; k < 2 * n; ++k) w[k] = float((r + 1) * (k + 1));
  loom::Tensor loss = loom::sum(loom::all_gather(x) * loom::tensor(w, {n, 2}, "lazy"));
  loss.backward();
  std::vector<float> gx = x.grad().to_vector<float>();
  const double s = n * (n + 1) / 2.0;
  expect_near(gx[0], s * (2 * r + 1), "gradient of all_gather [0]");
  expect_near(gx[1], s * (2 * r + 2), "gradient of all_gather [1]");
  loom::Tensor z = loom::tensor(std::vector<float>(2 * n, 1.f), {n, 2}, "lazy");
  z.requires_grad_(true);
  loom::Tensor wr = loom::tensor({1.f * (r + 1), -1.f}, {1, 2}, "lazy");
  loom::sum(loom::reduce_scatter(z, ReduceOp::sum) * wr).backward();
  std::vector<float> gz = z.grad().to_vector<float>();
  for (int q = 0; q < n; ++q) {
    expect_near(gz[2 * q], q + 1, "gradient of reduce_scatter [q, 0]");
    expect_near(gz[2 * q + 1], -1, "gradient of reduce_scatter [q, 1]");
  }
}

// Many lazy:sim steps of two all_reduces, each started and waited for on the
// sim stream while the progress thread tests it. The regression: the wait
// was a later stream item, so the stream could go idle in between (sim
// memory PROT_NONE) while the progress thread's MPI_Test received the
// reduction into it: a rare SIGSEGV in memcpy, likelier the more steps run.
void check_sim_steps_with_progress_thread(loom::dist::ProcessGroup& pg) {
  const int r = pg.rank(), n = pg.world_size();
  const double s = n * (n + 1) / 2.0;
  for (int step = 0; step < 100; ++step) {
    const float k = static_cast<float>((r + 1) * (step % 7 + 1));
    loom::Tensor x = loom::tensor({k, 2 * k, 3 * k}, {3}, "lazy:sim");
    loom::Tensor sum = loom::all_reduce(x);
    loom::Tensor mean = loom::all_reduce(x, ReduceOp::mean);
    loom::lazy::mark_step();
    std::vector<float> vs = sum.to_vector<float>(), vm = mean.to_vector<float>();
    for (int i = 0; i < 3; ++i) {
      expect_near(vs[i], s * (step % 7 + 1) * (i + 1), "lazy:sim step all_reduce sum");
      expect_near(vm[i], s / n * (step % 7 + 1) * (i + 1), "lazy:sim step all_reduce mean");
    }
  }
}

// A started all_reduce completes while this thread makes no MPI call (the
// progress thread moves it; Open MPI here has no asynchronous progress of
// its own): completed_ns() is only an atomic read. 1 MiB of f32 (several
// rounds of the reduction), 20 s at most.
void check_progress_without_mpi_calls(loom::dist::ProcessGroup& pg) {
  const size_t count = size_t{1} << 18;
  std::vector<float> f(count, static_cast<float>(pg.rank() + 1));
  auto work = pg.all_reduce_async(f.data(), count, DataType::f32, ReduceOp::sum);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (work->completed_ns() < 0 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (work->completed_ns() < 0) {
    std::fprintf(stderr, "[rank %d] FAIL: all_reduce made no progress without MPI calls\n",
                 pg.rank());
    ++g_failures;
  }
  work->wait();
  const int n = pg.world_size();
  expect_near(f[count - 1], n * (n + 1) / 2.0, "all_reduce completed by the progress thread");
}

int run_collectives() {
  loom::dist::ProcessGroup& pg = loom::dist::init_process_group("auto");
  loom::dist::LaunchEnv env = loom::dist::launch_env();
  expect_near(pg.rank(), env.rank, "rank from the environment");
  expect_near(pg.world_size(), env.world_size, "world size from the environment");
  check_buffer_collectives(pg);
  check_all_reduce_op(pg);
  check_gather_scatter_buffers(pg);
  check_gather_scatter_ops(pg);
  check_sim_steps_with_progress_thread(pg);
  if (pg.world_size() > 1) check_progress_without_mpi_calls(pg);
  loom::dist::check_same_on_all_ranks("arguments", std::string("--learning_rate 1e-3"));
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  if (g_failures == 0)
    std::printf("[rank %d] ok: %d ranks, backend %s, host %s\n", pg.rank(), pg.world_size(),
                std::string(pg.backend_name()).c_str(), host);
  return g_failures == 0 ? 0 : 1;
}

void run_fault(const std::string& scenario) {
  loom::dist::ProcessGroup& pg = loom::dist::init_process_group("auto");
  if (scenario == "timeout" || scenario == "graph_timeout") {
    pg.set_timeout(std::chrono::seconds(2));
    loom::dist::graph_process_group().set_timeout(std::chrono::seconds(2));
  }
  pg.barrier();
  if (scenario == "throw") {
    if (pg.rank() == 1) loom::fail("[train] bad batch 7: token id 99 is out of range");
    pg.barrier();  // the others wait here until the abort ends them
  } else if (scenario == "kill") {
    if (pg.rank() == 1) std::raise(SIGKILL);
    float v = 1;
    pg.all_reduce(&v, 1, DataType::f32, ReduceOp::sum);
  } else if (scenario == "timeout") {
    if (pg.rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(30));
    try {
      pg.barrier();
    } catch (const loom::Error&) {
      // The timed-out barrier is still in flight: the next collective must
      // fail at once, without an MPI call that could progress the stale one.
      try {
        float v = 1;
        pg.all_reduce(&v, 1, DataType::f32, ReduceOp::sum);
      } catch (const loom::Error& next) {
        std::fprintf(stderr, "after the timeout: %s\n", next.what());
      }
      throw;
    }
  } else if (scenario == "graph_timeout") {
    if (pg.rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(30));
    loom::Tensor x = loom::tensor({1.f, 2.f}, {2}, "lazy");
    loom::Tensor y = loom::all_reduce(x);
    loom::lazy::mark_step();
    std::printf("unreachable: %f\n", y.to_vector<float>()[0]);
  } else if (scenario == "mismatch") {
    std::vector<std::string> params = {"wte.weight f32[10,8]", "ln_f.weight f32[8]"};
    if (pg.rank() == 1) params[1] = "ln_f.weight f32[9]";
    loom::dist::check_same_on_all_ranks("parameters", params);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario = argc > 1 ? argv[1] : "";
  if (scenario == "collectives") {
    int rc = 1;
    loom::dist::run_main([&] { rc = run_collectives(); });
    return rc;
  }
  if (scenario == "throw" || scenario == "kill" || scenario == "timeout" ||
      scenario == "graph_timeout" || scenario == "mismatch") {
    try {
      loom::dist::run_main([&] { run_fault(scenario); });
    } catch (const loom::Error& e) {  // one rank: run_main lets it through
      std::fprintf(stderr, "loom: error: %s\n", e.what());
      return 1;
    }
    return 0;
  }
  std::fprintf(stderr,
               "usage: loom_dist_worker collectives|throw|kill|timeout|graph_timeout|mismatch\n");
  return 2;
}
