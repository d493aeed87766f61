// The dist layer in one process: the launch environment (mpirun's and
// torchrun's variables), the one-rank group's collectives (identities that
// still count in the metrics), the backend registry and its errors, and
// check_same_on_all_ranks on one rank. Several ranks: the dist_* CTests
// (tests/distributed/dist_worker.cpp under mpirun).
#include <gtest/gtest.h>

#include "common/error_of.h"
#include "common/scoped_env.h"
#include "loom/dist.h"
#include "loom/metrics.h"

namespace loom {
namespace {

using testing::error_of;
using testing::ScopedEnv;

TEST(DistLaunchEnv, ReadsOpenMpiVariables) {
  ScopedEnv size("OMPI_COMM_WORLD_SIZE", "4");
  ScopedEnv rank("OMPI_COMM_WORLD_RANK", "3");
  dist::LaunchEnv env = dist::launch_env();
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.world_size, 4);
  EXPECT_EQ(env.launcher, "mpirun");
  EXPECT_TRUE(dist::launched_by_mpirun());
}

TEST(DistLaunchEnv, ReadsTorchrunVariablesButIsNotMpirun) {
  ScopedEnv size("WORLD_SIZE", "2");
  ScopedEnv rank("RANK", "1");
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE"))
    GTEST_SKIP() << "run under an MPI launcher";
  dist::LaunchEnv env = dist::launch_env();
  EXPECT_EQ(env.rank, 1);
  EXPECT_EQ(env.world_size, 2);
  EXPECT_EQ(env.launcher, "torchrun");
  EXPECT_FALSE(dist::launched_by_mpirun());
}

TEST(DistLaunchEnv, BadValuesNameTheVariable) {
  {
    ScopedEnv size("OMPI_COMM_WORLD_SIZE", "two");
    EXPECT_EQ(error_of([] { dist::launch_env(); }),
              "[dist] OMPI_COMM_WORLD_SIZE='two' is not a non-negative integer");
  }
  ScopedEnv size("OMPI_COMM_WORLD_SIZE", "2");
  ScopedEnv rank("OMPI_COMM_WORLD_RANK", "2");
  EXPECT_EQ(
      error_of([] { dist::launch_env(); }),
      "[dist] OMPI_COMM_WORLD_RANK=2 and OMPI_COMM_WORLD_SIZE=2 do not make a rank of the job");
}

TEST(DistSingleGroup, CollectivesAreIdentitiesAndCounted) {
  dist::ProcessGroup& pg = dist::default_process_group();
  if (pg.world_size() != 1) GTEST_SKIP() << "the test process is one of several ranks";
  metrics::reset();
  std::vector<float> v = {1.5f, -2.f, 3.f};
  pg.all_reduce(v.data(), v.size(), dist::DataType::f32, dist::ReduceOp::mean);
  pg.all_reduce_async(v.data(), v.size(), dist::DataType::f32, dist::ReduceOp::sum)->wait();
  EXPECT_EQ(v, (std::vector<float>{1.5f, -2.f, 3.f}));
  EXPECT_EQ(metrics::counter("AllReduceCount"), 2);
  EXPECT_EQ(metrics::counter("AllReduceBytes"), 24);
  EXPECT_EQ(metrics::timer_count("AllReduceTime"), 2);
  std::vector<uint8_t> bytes = {7, 8};
  EXPECT_EQ(pg.all_gather(bytes), bytes);
  EXPECT_EQ(error_of([&] { pg.broadcast(bytes.data(), 2, 1); }),
            "[dist] broadcast root 1 is not a rank (world size 1)");
  pg.barrier();
  EXPECT_EQ(dist::rank_prefix(), "");
}

TEST(DistRegistry, ListsBackendsAndNamesTheMissingOnes) {
  std::vector<std::string> names;
  for (const dist::ProcessGroupBackend& b : dist::process_group_backends())
    names.emplace_back(b.name);
  EXPECT_EQ(names, (std::vector<std::string>{"single", "mpi"}));
  EXPECT_EQ(dist::process_group_backends()[1].make != nullptr, dist::mpi_available());
  EXPECT_EQ(error_of([] { dist::init_process_group("gloo"); }),
            "[dist] unknown ddp_backend 'gloo' (expected auto, single, mpi, none)");
  if (!dist::mpi_available()) {
    EXPECT_EQ(error_of([] { dist::init_process_group("mpi"); }),
              "[dist] ddp_backend mpi: loom was built without MPI (install libopenmpi-dev and "
              "rebuild)");
  }
}

TEST(DistNames, DataTypesAndReduceOps) {
  EXPECT_EQ(dist::data_type_size(dist::DataType::bf16), 2u);
  EXPECT_EQ(dist::data_type_size(dist::DataType::f64), 8u);
  EXPECT_EQ(dist::data_type_of(DType::i64), dist::DataType::i64);
  EXPECT_EQ(error_of([] { dist::data_type_of(DType::boolean); }),
            "[dist] dtype bool cannot be reduced");
  EXPECT_EQ(dist::reduce_op_from_name("mean"), dist::ReduceOp::mean);
  EXPECT_EQ(error_of([] { dist::reduce_op_from_name("avg"); }),
            "[dist] unknown reduce op 'avg' (expected sum, mean, max)");
}

TEST(DistCheckSame, OneRankAlwaysAgrees) {
  if (dist::world_size() != 1) GTEST_SKIP() << "the test process is one of several ranks";
  dist::check_same_on_all_ranks("arguments", std::string_view("--seed 1"));
  dist::check_same_on_all_ranks("parameters", std::vector<std::string>{"w f32[2]"});
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

TEST(DistRunMain, OneRankLetsTheErrorThrough) {
  if (dist::world_size() != 1) GTEST_SKIP() << "the test process is one of several ranks";
  bool ran = false;
  dist::run_main([&] { ran = true; });
  EXPECT_TRUE(ran);
  EXPECT_EQ(testing::error_of([] { dist::run_main([] { fail("[train] bad batch"); }); }),
            "[train] bad batch");
}

}  // namespace
}  // namespace loom
