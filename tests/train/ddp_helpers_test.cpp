// The data-parallel pieces of the Trainer that need no second process: the
// gradient bucket plan (reverse parameter order, byte cap, one dtype per
// bucket), the pack -> reduce -> unpack of .grad, the strided eval shards
// and their gathering back into dataset order. The multi-rank runs are in
// tests/distributed/ (mpirun).
#include <gtest/gtest.h>

#include "loom/error.h"
#include "loom/ops.h"
#include "loom/tensor.h"
#include "train/eval_shard.h"
#include "train/grad_buckets.h"

namespace loom::train {
namespace {

TEST(GradBuckets, ReverseOrderCapAndDtypeSplit) {
  // Bytes 4,4,4,100,4 with cap 8: from the last parameter, 100 is alone.
  auto b = plan_grad_buckets({4, 4, 4, 100, 4}, std::vector<DType>(5, DType::f32), 8);
  std::vector<GradBucket> want = {{4}, {3}, {2, 1}, {0}};
  EXPECT_EQ(b, want);
  auto d = plan_grad_buckets({4, 4, 4}, {DType::f32, DType::bf16, DType::bf16}, 100);
  std::vector<GradBucket> want_d = {{2, 1}, {0}};
  EXPECT_EQ(d, want_d);
  EXPECT_THROW(plan_grad_buckets({4}, {DType::f32}, 0), Error);
  EXPECT_THROW(plan_grad_buckets({4, 4}, {DType::f32}, 8), Error);
}

TEST(GradBuckets, PackReduceUnpackKeepsShapesAndValues) {
  Tensor a = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = tensor({7, 8}, {2});
  Tensor c = tensor({0, 0, 0}, {3});  // no .grad: packed as zeros
  a.set_grad(tensor({1, 2, 3, 4, 5, 6}, {2, 3}));
  b.set_grad(tensor({-1, -2}, {2}));
  std::vector<int64_t> sizes;
  auto twice = [&](const Tensor& flat) {
    sizes.push_back(flat.numel());
    return flat * 2.0;
  };
  // cap 1 MiB: one bucket of 11 values; b's 8 bytes first in it (reverse order).
  EXPECT_EQ(all_reduce_gradients({a, b, c}, 1.0, twice), 1);
  EXPECT_EQ(sizes, std::vector<int64_t>{11});
  EXPECT_EQ(a.grad().shape(), (Shape{2, 3}));
  EXPECT_EQ(a.grad().to_vector<float>(), (std::vector<float>{2, 4, 6, 8, 10, 12}));
  EXPECT_EQ(b.grad().to_vector<float>(), (std::vector<float>{-2, -4}));
  ASSERT_TRUE(c.grad().defined());
  EXPECT_EQ(c.grad().to_vector<float>(), (std::vector<float>{0, 0, 0}));
  // A cap below one parameter: a bucket per parameter, reverse order.
  sizes.clear();
  EXPECT_EQ(all_reduce_gradients({a, b, c}, 1e-6, twice), 3);
  EXPECT_EQ(sizes, (std::vector<int64_t>{3, 2, 6}));
  EXPECT_EQ(b.grad().to_vector<float>(), (std::vector<float>{-4, -8}));
}

TEST(EvalShard, StridedShardsWithoutPadding) {
  EXPECT_EQ(EvalShardSampler(5, 0, 2).indices(0), (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(EvalShardSampler(5, 1, 2).indices(0), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(EvalShardSampler(5, 1, 2).size(), 2);
  EXPECT_EQ(EvalShardSampler(5, 0, 2).size(), 3);  // the longer shard counts its last sample
  // size() is what indices() yields, for every split (the evaluation loop sizes by it).
  for (int64_t n = 0; n < 10; ++n)
    for (int64_t world = 1; world <= 4; ++world)
      for (int64_t rank = 0; rank < world; ++rank)
        EXPECT_EQ(EvalShardSampler(n, rank, world).size(),
                  static_cast<int64_t>(EvalShardSampler(n, rank, world).indices(0).size()))
            << "n " << n << " rank " << rank << " of " << world;
  EXPECT_EQ(EvalShardSampler(1, 1, 2).size(), 0);
  EXPECT_TRUE(EvalShardSampler(1, 1, 2).indices(0).empty());
  EXPECT_THROW(EvalShardSampler(5, 2, 2), Error);
}

TEST(EvalShard, GatherPutsRowsBackInDatasetOrder) {
  // Rank 0 holds rows 0, 2, 4 (width 1), rank 1 rows 1, 3 (width 2): padded with -100.
  Tensor r0 = tensor_i64({0, 2, 4}, {3, 1});
  Tensor r1 = tensor_i64({1, 11, 3, 13}, {2, 2});
  std::vector<Tensor> parts;
  for (const Tensor& t : {r0, r1}) parts.push_back(host_tensor_from_bytes(host_tensor_bytes(t)));
  Tensor all = interleave_shards(parts);
  EXPECT_EQ(all.shape(), (Shape{5, 2}));
  EXPECT_EQ(all.to_vector<int64_t>(),
            (std::vector<int64_t>{0, -100, 1, 11, 2, -100, 3, 13, 4, -100}));
  // A rank with no rows (n < world) sends an undefined tensor.
  Tensor none = host_tensor_from_bytes(host_tensor_bytes(Tensor()));
  EXPECT_FALSE(none.defined());
  Tensor f = interleave_shards({tensor({1.5f}, {1}), none});
  EXPECT_EQ(f.to_vector<float>(), std::vector<float>{1.5f});
  EXPECT_THROW(host_tensor_from_bytes("xyz"), Error);
}

}  // namespace
}  // namespace loom::train
