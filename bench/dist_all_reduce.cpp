// bench/dist_all_reduce: the ProcessGroup's f32 sum all_reduce over the
// ranks of an mpirun job, per message size (4 KiB .. 64 MiB): what one
// gradient bucket costs, to choose --ddp_bucket_cap_mb (the training bench
// against PyTorch DDP is the Trainer's, with its peer). Each size runs a
// fixed number of iterations (every rank must make the same calls: no
// adaptive timing), after 3 warm-up calls. Rank 0 prints one line per size:
// size, median ms, algorithm bandwidth (size / time) in MB/s.
//
//   mpirun -np 2 --allow-run-as-root --oversubscribe --bind-to none \
//       build/bench_dist_all_reduce [--iters 20]
//
// Without mpirun it runs on one rank (identities: the overhead of a call).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "loom/dist.h"

int main(int argc, char** argv) {
  int iters = 20;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--iters") == 0) iters = std::max(1, std::atoi(argv[i + 1]));
  loom::dist::ProcessGroup& pg = loom::dist::init_process_group("auto");
  if (pg.rank() == 0)
    std::printf("dist_all_reduce: %d ranks, backend %s, %d iterations per size\n", pg.world_size(),
                std::string(pg.backend_name()).c_str(), iters);
  for (size_t bytes = 4096; bytes <= (size_t{64} << 20); bytes *= 4) {
    std::vector<float> data(bytes / 4, 1.0f);
    for (int w = 0; w < 3; ++w)
      pg.all_reduce(data.data(), data.size(), loom::dist::DataType::f32, loom::dist::ReduceOp::sum);
    std::vector<double> ms;
    for (int it = 0; it < iters; ++it) {
      pg.barrier();
      auto t0 = std::chrono::steady_clock::now();
      pg.all_reduce(data.data(), data.size(), loom::dist::DataType::f32, loom::dist::ReduceOp::sum);
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    double median = ms[ms.size() / 2];
    if (pg.rank() == 0)
      std::printf("  %9zu bytes  median %9.3f ms  %9.1f MB/s\n", bytes, median,
                  bytes / 1e6 / (median / 1e3));
  }
  return 0;
}
