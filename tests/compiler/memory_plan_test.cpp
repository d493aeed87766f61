// The static memory plan (compiler/memory/): arena placement never overlaps
// two buffers live at the same step, stays near the brute-force lower bound
// (the most bytes live at any one step), reuses memory across steps and in
// place inside fused elementwise steps, and donates inputs to outputs only
// where the input is dead by the time the output is written.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/kernel_executable.h"
#include "compiler/memory/arena.h"
#include "compiler/memory/plan.h"
#include "compiler/program.h"
#include "ir/graph.h"
#include "run_graph.h"

namespace loom::compiler::memory {
namespace {

// Brute force, independent of arena_lower_bound: walk every step.
size_t live_peak(const std::vector<ArenaRequest>& rs) {
  int last = 0;
  for (const auto& r : rs) last = std::max(last, r.last);
  size_t peak = 0;
  for (int s = 0; s <= last; ++s) {
    size_t live = 0;
    for (const auto& r : rs)
      if (r.first <= s && s <= r.last) live += arena_round(r.nbytes);
    peak = std::max(peak, live);
  }
  return peak;
}

void expect_no_overlap(const std::vector<ArenaRequest>& rs, const ArenaLayout& l) {
  for (size_t a = 0; a < rs.size(); ++a) {
    EXPECT_EQ(l.offset[a] % kArenaAlign, 0u);
    EXPECT_LE(l.offset[a] + rs[a].nbytes, l.nbytes);
    for (size_t b = a + 1; b < rs.size(); ++b) {
      bool same_time = rs[a].first <= rs[b].last && rs[b].first <= rs[a].last;
      bool same_bytes =
          l.offset[a] < l.offset[b] + rs[b].nbytes && l.offset[b] < l.offset[a] + rs[a].nbytes;
      EXPECT_FALSE(same_time && same_bytes && rs[a].nbytes && rs[b].nbytes)
          << "requests " << a << " and " << b;
    }
  }
}

TEST(ArenaPlacement, RandomRequestsNeverOverlapAndStayNearTheBound) {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    std::vector<ArenaRequest> rs(2 + rng() % 60);
    for (auto& r : rs) {
      r.first = static_cast<int>(rng() % 50);
      r.last = r.first + static_cast<int>(rng() % 8);
      r.nbytes = 64 * (1 + rng() % 32) - (rng() % 2) * 13;
    }
    ArenaLayout l = place_in_arena(rs);
    expect_no_overlap(rs, l);
    size_t bound = live_peak(rs);
    EXPECT_EQ(arena_lower_bound(rs), bound) << "seed " << seed;
    EXPECT_GE(l.nbytes, bound) << "seed " << seed;
    EXPECT_LE(l.nbytes, bound + bound / 2) << "seed " << seed << ": greedy far above the bound";
  }
}

TEST(ArenaPlacement, AChainReusesTwoSlotsAndDisjointLivesShareOne) {
  // v_i written at step i, read at step i + 1: two buffers ping-pong.
  std::vector<ArenaRequest> chain;
  for (int i = 0; i < 10; ++i) chain.push_back({i, i + 1, 4096});
  EXPECT_EQ(place_in_arena(chain).nbytes, 2u * 4096);
  std::vector<ArenaRequest> disjoint = {{0, 1, 1000}, {2, 3, 1000}, {4, 5, 640}};
  ArenaLayout l = place_in_arena(disjoint);
  EXPECT_EQ(l.nbytes, arena_round(1000));
  EXPECT_EQ(l.offset[0], l.offset[1]);
}

TEST(ArenaPlacement, BestFitTakesTheSmallestGap) {
  // Placed largest first: A, H1 above it, B, H2, C. H1 and H2 die at step 1,
  // leaving holes of 960 and 512 bytes between A, B and C from step 2 on.
  // F (400 -> 448 bytes, steps 2..5) goes into the smaller hole, H2's.
  std::vector<ArenaRequest> rs = {
      {0, 5, 1024},  // A at 0
      {0, 1, 960},   // H1 at 1024
      {0, 5, 896},   // B at 1984
      {0, 1, 512},   // H2 at 2880
      {0, 5, 448},   // C at 3392
      {2, 5, 400},   // F: best fit 2880 (first fit would take 1024)
  };
  ArenaLayout l = place_in_arena(rs);
  expect_no_overlap(rs, l);
  EXPECT_EQ(l.offset[3], 2880u);
  EXPECT_EQ(l.offset[5], l.offset[3]);
  EXPECT_EQ(l.nbytes, 3840u);
}

Program lowered(const std::string& text) { return lower(ir::parse(text), true); }

TEST(MemoryPlan, IntermediatesLiveInTheArenaAndReuseIt) {
  // Three matmuls in a chain: %3 and %4 are intermediates; %3 dies when %5
  // is written, so %5 may not overlap it but %4's space may be reused.
  Program p = lowered(
      "graph(%0: f32[64,64], %1: f32[64,64]) {\n"
      "  %2 = matmul(%0, %1) : f32[64,64]\n"
      "  %3 = matmul(%2, %1) : f32[64,64]\n"
      "  %4 = matmul(%3, %1) : f32[64,64]\n"
      "  %5 = matmul(%4, %1) : f32[64,64]\n"
      "  return (%5)\n"
      "}\n");
  MemoryPlan m = plan_memory(p);
  EXPECT_EQ(m.placement[0], Placement::input);
  EXPECT_EQ(m.placement[2], Placement::arena);
  EXPECT_EQ(m.placement[5], Placement::output);
  EXPECT_EQ(m.arena_bytes, 2u * 64 * 64 * 4) << "three intermediates in two slots";
  EXPECT_EQ(m.offset[2], m.offset[4]);
  EXPECT_NE(m.offset[2], m.offset[3]);
  // %0 is read last at step 0, so the output (written at step 3) may take
  // its buffer; %1 is read by that matmul itself and may not.
  EXPECT_EQ(m.donor[5], 0);
  EXPECT_EQ(m.donated_bytes, 64u * 64 * 4);
  EXPECT_EQ(m.output_bytes, 0u);
}

TEST(MemoryPlan, FusedElementwiseStepWritesInPlace) {
  // %3 = exp(%2) + 1 is one fused step reading the matmul result %2 for the
  // last time: its output takes %2's bytes.
  Program p = lowered(
      "graph(%0: f32[32,32], %1: f32[32,32]) {\n"
      "  %2 = matmul(%0, %1) : f32[32,32]\n"
      "  %3 = exp(%2) : f32[32,32]\n"
      "  %4 = add(%3, %2) : f32[32,32]\n"
      "  %5 = matmul(%4, %1) : f32[32,32]\n"
      "  return (%5)\n"
      "}\n");
  MemoryPlan m = plan_memory(p);
  ASSERT_EQ(m.in_place.size(), 1u);
  EXPECT_EQ(m.in_place[0].output, 4);
  EXPECT_EQ(m.in_place[0].input, 2);
  EXPECT_EQ(m.offset[4], m.offset[2]);
  EXPECT_EQ(m.arena_bytes, 32u * 32 * 4) << "one slot for %2 and %4";
}

TEST(MemoryPlan, UpdatedInputsAreDonatedToOutputs) {
  // An SGD-like update: %0 (param) and %1 (grad) both die in the fused step
  // writing %3; the output takes one of their buffers: the first of equals, %0.
  Program p = lowered(
      "graph(%0: f32[256], %1: f32[256], %2: f32[]) {\n"
      "  %3 = mul(%1, %2) : f32[256]\n"
      "  %4 = sub(%0, %3) : f32[256]\n"
      "  return (%4)\n"
      "}\n");
  MemoryPlan m = plan_memory(p);
  int out = p.graph.outputs[0];
  EXPECT_EQ(m.donor[out], 0);
  EXPECT_EQ(m.donated_to[0], out);
  EXPECT_EQ(m.donated_to[1], -1);
  EXPECT_EQ(m.donated_bytes, 256u * 4);
  EXPECT_EQ(m.output_bytes, 0u);
  EXPECT_EQ(m.planned_peak_bytes(), m.arena_bytes);
}

TEST(MemoryPlan, TheInputUpdatedInTheOutputsStepIsThePreferredDonor) {
  // %1 dies at step 0 (a reduction), %0 in step 1, the fused step writing
  // %4: both may host %4; the tensor being updated there (%0, a parameter in
  // its optimizer step) is preferred over the one dead earlier.
  Program p = lowered(
      "graph(%0: f32[256], %1: f32[256]) {\n"
      "  %2 = sum(%1) : f32[]\n"
      "  %3 = mul(%0, %2) : f32[256]\n"
      "  %4 = sub(%0, %3) : f32[256]\n"
      "  return (%4)\n"
      "}\n");
  ASSERT_EQ(p.steps.size(), 2u);
  MemoryPlan m = plan_memory(p);
  EXPECT_EQ(m.donor[4], 0);
  EXPECT_EQ(m.donated_to[1], -1);
}

TEST(MemoryPlan, NoDonationOfAnInputStillReadAfterTheOutputIsWritten) {
  // %2 is written at step 0 (an output), but %0 is read again after it, so
  // %0 cannot host %2; %3's step reads %0 but is no fused elementwise step,
  // so it cannot write over it either. A passed-through input (%1 is also
  // an output) is never donated.
  Program p = lowered(
      "graph(%0: f32[8,8], %1: f32[8,8]) {\n"
      "  %2 = matmul(%0, %0) : f32[8,8]\n"
      "  %3 = matmul(%2, %0) : f32[8,8]\n"
      "  return (%2, %3, %1)\n"
      "}\n");
  MemoryPlan m = plan_memory(p);
  EXPECT_EQ(m.donor[2], -1);
  EXPECT_EQ(m.donor[3], -1) << "a matmul may not write over its own operand %0";
  EXPECT_EQ(m.donated_to[1], -1);
}

TEST(MemoryPlan, ReshapeOfAnIntermediateIsAnAliasNotACopy) {
  // %3 = reshape(%2) shares %2's bytes and runs no kernel; %2's buffer now
  // lives until %3's last read (step of %5), so %4 (exp of %2, fused, %2's
  // last direct read) may not write over it in place.
  Program p = lowered(
      "graph(%0: f32[8,16], %1: f32[16,16]) {\n"
      "  %2 = matmul(%0, %1) : f32[8,16]\n"
      "  %3 = reshape(%2) shape=[2,4,16] : f32[2,4,16]\n"
      "  %4 = exp(%2) : f32[8,16]\n"
      "  %5 = matmul(%3, %1) : f32[2,4,16]\n"
      "  %6 = matmul(%4, %1) : f32[8,16]\n"
      "  return (%5, %6)\n"
      "}\n");
  MemoryPlan m = plan_memory(p);
  ASSERT_EQ(m.alias_steps.size(), 1u);
  EXPECT_EQ(p.steps[m.alias_steps[0]].outputs[0], 3);
  EXPECT_EQ(m.offset[3], m.offset[2]);
  EXPECT_TRUE(m.in_place.empty()) << "exp(%2) may not overwrite bytes %3 still reads";
  EXPECT_NE(m.offset[4], m.offset[2]);
}

TEST(MemoryPlan, ReshapeOfAGraphInputOrIntoAnOutputIsStillACopy) {
  Program p = lowered(
      "graph(%0: f32[8,16], %1: f32[16,16]) {\n"
      "  %2 = reshape(%0) shape=[128] : f32[128]\n"
      "  %3 = matmul(%0, %1) : f32[8,16]\n"
      "  %4 = reshape(%3) shape=[2,64] : f32[2,64]\n"
      "  return (%2, %4)\n"
      "}\n");
  EXPECT_TRUE(plan_memory(p).alias_steps.empty());
}

TEST(MemoryPlan, AliasedReshapesGiveTheUnplannedResults) {
  // Run through the cpu backend's Executable (plan, aliases, in-place) and
  // op by op with a buffer per value: the numbers must agree exactly.
  ir::Graph g = ir::parse(
      "graph(%0: f32[8,16], %1: f32[16,16]) {\n"
      "  %2 = matmul(%0, %1) : f32[8,16]\n"
      "  %3 = reshape(%2) shape=[2,4,16] : f32[2,4,16]\n"
      "  %4 = reshape(%3) shape=[128] : f32[128]\n"
      "  %5 = exp(%2) : f32[8,16]\n"
      "  %6 = add(%5, %2) : f32[8,16]\n"
      "  %7 = matmul(%3, %1) : f32[2,4,16]\n"
      "  %8 = sum(%4) : f32[]\n"
      "  %9 = matmul(%6, %1) : f32[8,16]\n"
      "  return (%7, %8, %9)\n"
      "}\n");
  std::vector<cpu_test::Operand> in = {cpu_test::random_operand({8, 16}, DType::f32, 1, -1, 1),
                                       cpu_test::random_operand({16, 16}, DType::f32, 2, -1, 1)};
  const backends::KernelBackend& cpu = backends::cpu_backend();
  auto want = testing::run_graph(cpu, g, in);
  auto program = std::make_shared<const Program>(lower(g, true));
  auto exe = cpu.compile_kernels(program);
  EXPECT_EQ(exe->plan().alias_steps.size(), 2u);
  auto outs = exe->run({in[0].buffer, in[1].buffer}, {false, false});
  ASSERT_EQ(outs.size(), want.size());
  for (size_t o = 0; o < outs.size(); ++o) {
    const ops::TensorType& t = g.type_of(g.outputs[o]);
    for (int64_t i = 0; i < t.numel(); ++i)
      ASSERT_EQ(load_as_double(outs[o]->data(), t.dtype, i), want[o][i])
          << "output " << o << " at " << i;
  }
}

// Rows of a matrix: %3 (rows 0-7) and %4 (rows 8-31) share %2's bytes at
// offsets 0 and 8 rows x 32 bytes; a column slice (%5) and row 1 (%6, 32
// bytes in: not 64-byte aligned) are copies. exp(%4), a kernel of its own
// (one op is no fused group), writes a buffer of its own.
const char* kSliceViews =
    "graph(%0: f32[32,16], %1: f32[16,8]) {\n"
    "  %2 = matmul(%0, %1) : f32[32,8]\n"
    "  %3 = slice(%2) stop=8 : f32[8,8]\n"
    "  %4 = slice(%2) start=8 stop=32 : f32[24,8]\n"
    "  %5 = slice(%2) axis=1 stop=4 : f32[32,4]\n"
    "  %6 = slice(%2) start=1 stop=2 : f32[1,8]\n"
    "  %7 = sum(%3) : f32[]\n"
    "  %8 = sum(%5) : f32[]\n"
    "  %9 = sum(%6) : f32[]\n"
    "  %10 = exp(%4) : f32[24,8]\n"
    "  %11 = matmul(%10, %1) trans_b=true : f32[24,16]\n"
    "  return (%7, %8, %9, %11)\n"
    "}\n";

TEST(MemoryPlan, RowSlicesAreViewsOtherSlicesCopies) {
  Program p = lowered(kSliceViews);
  MemoryPlan m = plan_memory(p);
  std::vector<int> aliased;
  for (int s : m.alias_steps) aliased.push_back(p.steps[s].outputs[0]);
  EXPECT_EQ(aliased, (std::vector<int>{3, 4}));
  EXPECT_EQ(m.offset[3], m.offset[2]);
  EXPECT_EQ(m.offset[4], m.offset[2] + 8 * 8 * 4);
  EXPECT_TRUE(m.in_place.empty());
}

// Overlapping row views of one buffer read by one fused step: %4 (rows
// 8-23) and %3 (rows 0-15). Written over %4's bytes, out[i] = buf[i + 64]
// would overwrite %3's row 8 onward before it is read: no in-place, and the
// values are those of a buffer per value.
const char* kOverlappingViews =
    "graph(%0: f32[24,16], %1: f32[16,8]) {\n"
    "  %2 = matmul(%0, %1) : f32[24,8]\n"
    "  %3 = slice(%2) stop=16 : f32[16,8]\n"
    "  %4 = slice(%2) start=8 stop=24 : f32[16,8]\n"
    "  %5 = neg(%4) : f32[16,8]\n"
    "  %6 = add(%5, %3) : f32[16,8]\n"
    "  %7 = matmul(%6, %1) trans_b=true : f32[16,16]\n"
    "  return (%7)\n"
    "}\n";

TEST(MemoryPlan, AStepReadingTwoViewsOfABufferDoesNotWriteOverEither) {
  Program p = lowered(kOverlappingViews);
  MemoryPlan m = plan_memory(p);
  EXPECT_EQ(m.alias_steps.size(), 2u);
  for (const InPlace& ip : m.in_place)
    EXPECT_TRUE(ip.input != 3 && ip.input != 4) << "%" << ip.output << " over %" << ip.input;
  ir::Graph g = ir::parse(kOverlappingViews);
  std::vector<cpu_test::Operand> in = {cpu_test::random_operand({24, 16}, DType::f32, 5, -1, 1),
                                       cpu_test::random_operand({16, 8}, DType::f32, 6, -1, 1)};
  const backends::KernelBackend& cpu = backends::cpu_backend();
  auto want = testing::run_graph(cpu, g, in);
  auto exe = cpu.compile_kernels(std::make_shared<const Program>(lower(g, true)));
  auto outs = exe->run({in[0].buffer, in[1].buffer}, {false, false});
  ASSERT_EQ(outs.size(), 1u);
  for (int64_t i = 0; i < 16 * 16; ++i)
    ASSERT_EQ(load_as_double(outs[0]->data(), DType::f32, i), want[0][i]) << "at " << i;
}

TEST(MemoryPlan, SliceViewsGiveTheUnplannedResults) {
  ir::Graph g = ir::parse(kSliceViews);
  std::vector<cpu_test::Operand> in = {cpu_test::random_operand({32, 16}, DType::f32, 3, -1, 1),
                                       cpu_test::random_operand({16, 8}, DType::f32, 4, -1, 1)};
  const backends::KernelBackend& cpu = backends::cpu_backend();
  auto want = testing::run_graph(cpu, g, in);
  auto exe = cpu.compile_kernels(std::make_shared<const Program>(lower(g, true)));
  EXPECT_EQ(exe->plan().alias_steps.size(), 2u);
  auto outs = exe->run({in[0].buffer, in[1].buffer}, {false, false});
  ASSERT_EQ(outs.size(), want.size());
  for (size_t o = 0; o < outs.size(); ++o) {
    const ops::TensorType& t = g.type_of(g.outputs[o]);
    for (int64_t i = 0; i < t.numel(); ++i)
      ASSERT_EQ(load_as_double(outs[o]->data(), t.dtype, i), want[o][i])
          << "output " << o << " at " << i;
  }
}

// A view that dies may be written over while another view of its buffer
// is still read later, when their bytes do not overlap: index_add(%5)
// takes rows 0-15 while rows 16-31 (%6) wait for the sum (the fused LM
// head's dW rows taken by the tied embedding's index_add while the final
// norm still reads dH). With %6 = rows 8-23, the bytes overlap: a copy.
// With `late`, %6 is sliced from %4 only after the index_add (the loss
// row of the fused head, taken at the end of the step).
std::string later_view_graph(int64_t start, bool late) {
  std::string view = "  %6 = slice(%4) start=" + std::to_string(start) +
                     " stop=" + std::to_string(start + 16) + " : f32[16,8]\n";
  std::string scatter = "  %7 = index_add(%5, %2, %3) : f32[16,8]\n";
  return "graph(%0: f32[32,16], %1: f32[16,8], %2: i64[4], %3: f32[4,8]) {\n"
         "  %4 = matmul(%0, %1) : f32[32,8]\n"
         "  %5 = slice(%4) stop=16 : f32[16,8]\n" +
         (late ? scatter + view : view + scatter) +
         "  %8 = matmul(%7, %1) trans_b=true : f32[16,16]\n"
         "  %9 = sum(%6) : f32[]\n"
         "  return (%8, %9)\n"
         "}\n";
}

TEST(MemoryPlan, ADyingViewIsWrittenOverWhenNoLaterReadOverlapsIt) {
  for (auto [start, late] :
       {std::pair<int64_t, bool>{16, false}, {8, false}, {16, true}, {8, true}}) {
    SCOPED_TRACE("second view from row " + std::to_string(start) + (late ? ", taken late" : ""));
    Program p = lowered(later_view_graph(start, late));
    MemoryPlan m = plan_memory(p);
    EXPECT_EQ(m.alias_steps.size(), 2u);
    bool over_5 = false;
    for (const InPlace& ip : m.in_place) over_5 = over_5 || ip.input == 5;
    EXPECT_EQ(over_5, start == 16);
    ir::Graph g = ir::parse(later_view_graph(start, late));
    std::vector<cpu_test::Operand> in = {cpu_test::random_operand({32, 16}, DType::f32, 7, -1, 1),
                                         cpu_test::random_operand({16, 8}, DType::f32, 8, -1, 1),
                                         cpu_test::random_operand({4}, DType::i64, 9, 0, 15),
                                         cpu_test::random_operand({4, 8}, DType::f32, 10, -1, 1)};
    const backends::KernelBackend& cpu = backends::cpu_backend();
    auto want = testing::run_graph(cpu, g, in);
    auto exe = cpu.compile_kernels(std::make_shared<const Program>(lower(g, true)));
    auto outs = exe->run({in[0].buffer, in[1].buffer, in[2].buffer, in[3].buffer},
                         {false, false, false, false});
    ASSERT_EQ(outs.size(), 2u);
    for (int64_t i = 0; i < 16 * 16; ++i)
      ASSERT_EQ(load_as_double(outs[0]->data(), DType::f32, i), want[0][i]) << "at " << i;
    EXPECT_EQ(load_as_double(outs[1]->data(), DType::f32, 0), want[1][0]);
  }
}

// A started collective reads its operand until its wait (the first reader
// of its result): the plan keeps the operand's bytes to itself until then,
// and an input it reads is not donated to an output written before it.
// (The kernels took a copy of the operand before; a reduce_scatter of every
// layer's gradient in flight held a whole model's gradients twice.)
TEST(MemoryPlan, ACollectiveOperandLivesUntilTheWait) {
  Program p = lower(ir::parse("graph(%0: f32[16], %1: f32[32]) {\n"
                              "  %2 = neg(%0) : f32[16]\n"
                              "  %3 = reduce_scatter(%2) world_size=2 : f32[8]\n"
                              "  %4 = exp(%1) : f32[32]\n"
                              "  %5 = neg(%4) : f32[32]\n"
                              "  %6 = mul(%3, %3) : f32[8]\n"
                              "  return (%5, %6)\n}\n"),
                    false);
  MemoryPlan m = plan_memory(p);
  ASSERT_EQ(collective_wait_step(p, 1, true), 4);
  EXPECT_EQ(m.last[2], 4) << "the operand of the reduce_scatter started at step 1";
  for (int v : {4})  // written while the collective is in flight
    EXPECT_TRUE(m.offset[v] >= m.offset[2] + 64 || m.offset[v] + 128 <= m.offset[2])
        << "%" << v << " shares the collective's operand bytes";

  Program q = lower(ir::parse("graph(%0: f32[16]) {\n"
                              "  %1 = all_gather(%0) world_size=2 : f32[32]\n"
                              "  %2 = exp(%0) : f32[16]\n"
                              "  %3 = neg(%2) : f32[16]\n"
                              "  %4 = mul(%1, %1) : f32[32]\n"
                              "  return (%3, %4)\n}\n"),
                    false);
  MemoryPlan mq = plan_memory(q);
  EXPECT_EQ(mq.last[0], 3);
  EXPECT_EQ(mq.donor[3], -1) << "%0 donated to %3 while the all_gather still reads it";

  // Only the caller reads the gather: its wait is after the last step, and
  // the fused neg at that step may not write over %0 (in place, donated).
  Program r = lower(ir::parse("graph(%0: f32[16]) {\n"
                              "  %1 = all_gather(%0) world_size=2 : f32[32]\n"
                              "  %2 = neg(%0) : f32[16]\n"
                              "  return (%1, %2)\n}\n"),
                    true);
  ASSERT_EQ(collective_wait_step(r, 0, false), static_cast<int>(r.steps.size()));
  MemoryPlan mr = plan_memory(r);
  EXPECT_EQ(mr.last[0], static_cast<int>(r.steps.size()));
  EXPECT_EQ(mr.donor[2], -1) << "%0 written by the neg while the all_gather still reads it";

  // all_reduce copies its operand into its output when it starts.
  Program d = lower(ir::parse("graph(%0: f32[16]) {\n"
                              "  %1 = neg(%0) : f32[16]\n"
                              "  %2 = all_reduce(%1) : f32[16]\n"
                              "  %3 = exp(%0) : f32[16]\n"
                              "  %4 = add(%2, %3) : f32[16]\n"
                              "  return (%4)\n}\n"),
                    false);
  EXPECT_EQ(plan_memory(d).last[1], 1) << "an all_reduce operand ends at its own step";
}

// Unit after unit, backward reduce-scatters a flat gradient whose shard the
// optimizer reads only at the end: each is waited for when the second
// later one starts, so at most three operands are live at once (not all).
TEST(MemoryPlan, AReduceScatterIsWaitedForWhenTheSecondLaterOneStarts) {
  Program p = lower(ir::parse("graph(%0: f32[16]) {\n"
                              "  %1 = neg(%0) : f32[16]\n"
                              "  %2 = reduce_scatter(%1) world_size=2 : f32[8]\n"
                              "  %3 = exp(%0) : f32[16]\n"
                              "  %4 = reduce_scatter(%3) world_size=2 : f32[8]\n"
                              "  %5 = tanh(%0) : f32[16]\n"
                              "  %6 = reduce_scatter(%5) world_size=2 : f32[8]\n"
                              "  %7 = add(%2, %4) : f32[8]\n"
                              "  %8 = add(%7, %6) : f32[8]\n"
                              "  return (%8)\n}\n"),
                    false);
  ASSERT_EQ(p.steps[1].instr.op, ops::OpKind::k_reduce_scatter);
  EXPECT_EQ(collective_wait_step(p, 1, true), 5) << "at the third reduce_scatter's start";
  EXPECT_EQ(collective_wait_step(p, 3, true), 6) << "at the first reader";
  EXPECT_EQ(collective_wait_step(p, 5, true), 7);
  MemoryPlan m = plan_memory(p);
  EXPECT_EQ(m.last[1], 5);
  EXPECT_EQ(m.last[3], 6);
}

// An embedding's gradient: index_add of the rows into zeros [V, C]. The
// output takes the zeros' buffer (they die there), not a second [V, C];
// the source rows are never written over (their values: every lazy model
// test with an embedding, against eager).
TEST(MemoryPlan, AnIndexAddWritesOverItsDyingBase) {
  Program p = lower(ir::parse("graph(%0: i64[3], %1: f32[3,64]) {\n"
                              "  %2 = full() shape=[50,64] : f32[50,64]\n"
                              "  %3 = index_add(%2, %0, %1) axis=0 : f32[50,64]\n"
                              "  %4 = neg(%3) : f32[50,64]\n"
                              "  %5 = sum(%4) : f32[]\n"
                              "  return (%5)\n}\n"),
                    false);
  MemoryPlan m = plan_memory(p);
  ASSERT_EQ(m.placement[2], Placement::arena);
  EXPECT_EQ(m.offset[3], m.offset[2]) << "the index_add's output is its base's bytes";
  bool listed = false;
  for (const InPlace& ip : m.in_place) listed = listed || (ip.output == 3 && ip.input == 2);
  EXPECT_TRUE(listed);
}

// A KV cache write: the cache %0 is read last by the index_copy that
// rewrites it, so the new cache %3 (a graph output) takes %0's buffer;
// an index_copy of an intermediate (%5 over %4, dying there) writes over
// it in the arena. Either way the kernel copies only the new rows
// (tests/backends/cpu_index_shape_test.cpp).
TEST(MemoryPlan, AnIndexCopyWritesOverItsDyingSelf) {
  Program p = lower(ir::parse("graph(%0: f32[1,2,8,4], %1: i64[1], %2: f32[1,2,1,4]) {\n"
                              "  %3 = index_copy(%0, %1, %2) axis=2 : f32[1,2,8,4]\n"
                              "  %4 = exp(%3) : f32[1,2,8,4]\n"
                              "  %5 = index_copy(%4, %1, %2) axis=2 : f32[1,2,8,4]\n"
                              "  %6 = sum(%5) : f32[]\n"
                              "  return (%3, %6)\n}\n"),
                    false);
  MemoryPlan m = plan_memory(p);
  EXPECT_EQ(m.donor[3], 0) << "the new cache is the old cache's buffer";
  EXPECT_EQ(m.donated_to[0], 3);
  EXPECT_EQ(m.donated_to[2], -1) << "the source rows are never written over";
  ASSERT_EQ(m.placement[4], Placement::arena);
  EXPECT_EQ(m.offset[5], m.offset[4]);
  bool listed = false;
  for (const InPlace& ip : m.in_place) listed = listed || (ip.output == 5 && ip.input == 4);
  EXPECT_TRUE(listed);
}

// index_copy(x, 0, perm, x) permutes x's rows: writing them into x's own
// buffer would read rows already overwritten. Neither the donation (%2
// over %0) nor the in-place reuse (%4 over %3) may happen, and the
// Executable gives the unplanned numbers.
TEST(MemoryPlan, AnIndexCopyNeverWritesOverTheSourceItReads) {
  ir::Graph g = ir::parse(
      "graph(%0: f32[4,3], %1: i64[4]) {\n"
      "  %2 = index_copy(%0, %1, %0) : f32[4,3]\n"
      "  %3 = exp(%2) : f32[4,3]\n"
      "  %4 = index_copy(%3, %1, %3) : f32[4,3]\n"
      "  %5 = sum(%4) : f32[]\n"
      "  return (%2, %5)\n}\n");
  Program p = lower(g, false);
  MemoryPlan m = plan_memory(p);
  EXPECT_EQ(m.donor[2], -1);
  EXPECT_NE(m.offset[4], m.offset[3]);
  for (const InPlace& ip : m.in_place) EXPECT_NE(ip.output, 4);
  std::vector<cpu_test::Operand> in = {cpu_test::random_operand({4, 3}, DType::f32, 3, -1, 1),
                                       cpu_test::operand_of({2, 0, 3, 1}, {4}, DType::i64)};
  const backends::KernelBackend& cpu = backends::cpu_backend();
  auto want = testing::run_graph(cpu, g, in);
  auto exe = cpu.compile_kernels(std::make_shared<const Program>(lower(g, false)));
  auto outs = exe->run({in[0].buffer, in[1].buffer}, {true, false});
  ASSERT_EQ(outs.size(), want.size());
  for (size_t o = 0; o < outs.size(); ++o) {
    const ops::TensorType& t = g.type_of(g.outputs[o]);
    for (int64_t i = 0; i < t.numel(); ++i)
      ASSERT_EQ(load_as_double(outs[o]->data(), t.dtype, i), want[o][i])
          << "output " << o << " at " << i;
  }
}

}  // namespace
}  // namespace loom::compiler::memory
