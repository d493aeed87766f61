// Data-parallel `loom train` under mpirun (issue 12): with dropout off, 2
// ranks x batch 4 give the per-step losses and final weights of 1 rank x
// batch 8 (to 1e-6 relative, over 10 steps, also with gradient accumulation
// 2), the evaluation before training (same weights, eval batch 1) is bit for
// bit the one-process value, only rank 0 prints and writes; the hang
// scenarios of pytorch/xla (#2020 uneven training shards, #2749 uneven
// evaluation shards, #2712 a save on rank 0 that fails) end, with a timeout;
// a rank killed mid-training ends the job within 60 s; `loom evaluate` with
// --dataloader_drop_last gives the one-process metrics, printed once; ranks
// whose --bf16 autocast decisions differ stop at start-up. With a padded
// shard (n not divisible by the ranks) the repeated samples count zero, also
// in a batch of nothing but padding, and a mid-epoch resume skips the right
// batches; messages the same on every rank are printed once.
// Skips when mpirun or the loom binary is absent, or loom was built without MPI.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "cli/mpi_train_runs.h"
#include "cli/tiny_train.h"
#include "loom/dist.h"
#include "loom/safetensors.h"

namespace loom::testing {
namespace {

namespace fs = std::filesystem;

class DdpTrainCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (loom_binary_path().empty())
      GTEST_SKIP() << "the loom binary is not built next to the tests";
    if (std::system("command -v mpirun >/dev/null 2>&1") != 0)
      GTEST_SKIP() << "mpirun not found (Debian: openmpi-bin)";
    if (!dist::mpi_available()) GTEST_SKIP() << "loom was built without MPI (LOOM_MPI)";
    corpus_ = write_tiny_corpus(dir_, 400);
  }

  // `samples` training samples, 2 epochs, no evaluation: one process x
  // `one_batch` into dir_/<tag>_one and 2 ranks x `two_batch` into
  // dir_/<tag>_two, `ga` accumulation steps; their trainer_state.json.
  void padded_runs(const std::string& tag, const char* samples, int one_batch, int two_batch,
                   int ga, nlohmann::json* s1, nlohmann::json* s2) {
    auto flags = [&](const std::string& out, int batch) {
      auto f = ddp_flags(corpus_, out, batch, ga);
      f.insert(f.end(), {"--max_train_samples", samples, "--max_steps", "-1", "--num_train_epochs",
                         "2", "--eval_on_start", "false", "--do_eval", "false"});
      return f;
    };
    const std::string one = dir_.sub(tag + "_one"), two = dir_.sub(tag + "_two");
    CliResult r1 = run_ranks(dir_, 0, flags(one, one_batch));
    ASSERT_EQ(r1.exit_code, 0) << r1.err << r1.out;
    CliResult r2 = run_ranks(dir_, 2, flags(two, two_batch));
    ASSERT_EQ(r2.exit_code, 0) << r2.err << r2.out;
    *s1 = read_json(one + "/trainer_state.json");
    *s2 = read_json(two + "/trainer_state.json");
    ASSERT_FALSE(s1->is_discarded() || s2->is_discarded());
  }

  // 1 rank x batch 8 and 2 ranks x batch 4, with `ga` accumulation steps.
  void expect_same_as_one_process(int ga) {
    const std::string one = dir_.sub("one"), two = dir_.sub("two");
    CliResult r1 = run_ranks(dir_, 0, ddp_flags(corpus_, one, 8, ga));
    ASSERT_EQ(r1.exit_code, 0) << r1.err << r1.out;
    CliResult r2 = run_ranks(dir_, 2, ddp_flags(corpus_, two, 4, ga));
    ASSERT_EQ(r2.exit_code, 0) << r2.err << r2.out;
    // Rank 0 alone prints the plan and the metrics.
    EXPECT_EQ(r2.out.find("loom train:"), r2.out.rfind("loom train:")) << r2.out;
    const std::string dp =
        "data parallel over 2 ranks (mpi): per_device_train_batch_size 4, "
        "global batch " +
        std::to_string(8 * ga);
    EXPECT_NE(r2.out.find(dp), std::string::npos) << r2.out;
    EXPECT_EQ(r2.out.find(dp), r2.out.rfind(dp)) << r2.out;
    EXPECT_EQ(r1.out.find("data parallel"), std::string::npos) << r1.out;
    nlohmann::json s1 = read_json(one + "/trainer_state.json");
    nlohmann::json s2 = read_json(two + "/trainer_state.json");
    ASSERT_FALSE(s1.is_discarded() || s2.is_discarded());
    EXPECT_EQ(s2.value("global_step", -1), 10);
    const auto loss1 = logged(s1, "loss"), loss2 = logged(s2, "loss");
    EXPECT_EQ(loss1.size(), 10u);
    expect_close(loss2, loss1, 1e-6, "loss");
    expect_close(logged(s2, "grad_norm"), logged(s1, "grad_norm"), 1e-5, "grad_norm");
    EXPECT_LE(max_weight_difference(two + "/model.safetensors", one + "/model.safetensors"), 1e-6);
    // Evaluation at step 0 (identical weights, eval batch 1): bit for bit;
    // over the 13 samples (7 + 6 on the ranks), none twice.
    const auto eval1 = logged(s1, "eval_loss"), eval2 = logged(s2, "eval_loss");
    ASSERT_EQ(eval1.size(), 1u);
    ASSERT_EQ(eval2.size(), 1u);
    EXPECT_EQ(eval2[0], eval1[0]);
    // After training (weights equal to 1e-6): the final evaluation.
    nlohmann::json e1 = read_json(one + "/eval_results.json");
    nlohmann::json e2 = read_json(two + "/eval_results.json");
    expect_close({e2.value("eval_loss", 0.0)}, {e1.value("eval_loss", 1.0)}, 1e-6, "eval_loss");
    EXPECT_EQ(e2.value("eval_samples", 0.0), 13.0);
  }

  TempDir dir_;
  std::string corpus_;
};

TEST_F(DdpTrainCli, TwoRanksEqualOneProcessWithTwiceTheBatch) { expect_same_as_one_process(1); }

TEST_F(DdpTrainCli, TwoRanksEqualOneProcessWithGradientAccumulation) {
  expect_same_as_one_process(2);
}

TEST_F(DdpTrainCli, OverlappedBucketReductionsGiveTheBlockingPathsBits) {
  // Small buckets (1 KiB: many all_reduces, each started during backward)
  // against the blocking path (LOOM_DDP_OVERLAP=0, no progress thread):
  // the same losses and weights bit for bit, with gradient accumulation.
  const std::string over = dir_.sub("overlap"), block = dir_.sub("blocking");
  auto flags = [&](const std::string& out) {
    auto f = ddp_flags(corpus_, out, 4, 2);
    f.insert(f.end(), {"--ddp_bucket_cap_mb", "0.001", "--max_steps", "4"});
    return f;
  };
  CliResult ro = run_ranks(dir_, 2, flags(over));
  ASSERT_EQ(ro.exit_code, 0) << ro.err << ro.out;
  CliResult rb =
      run_ranks(dir_, 2, flags(block), 240, {"LOOM_DDP_OVERLAP=0", "LOOM_MPI_PROGRESS_THREAD=0"});
  ASSERT_EQ(rb.exit_code, 0) << rb.err << rb.out;
  nlohmann::json so = read_json(over + "/trainer_state.json");
  nlohmann::json sb = read_json(block + "/trainer_state.json");
  ASSERT_FALSE(so.is_discarded() || sb.is_discarded());
  EXPECT_EQ(logged(so, "loss").size(), 4u);
  EXPECT_EQ(logged(so, "loss"), logged(sb, "loss"));
  EXPECT_EQ(logged(so, "grad_norm"), logged(sb, "grad_norm"));
  EXPECT_EQ(max_weight_difference(over + "/model.safetensors", block + "/model.safetensors"), 0.0);
  // The metrics report both timers.
  const std::string metrics = read_cli_file(over + "/lazy_metrics.json");
  EXPECT_NE(metrics.find("\"AllReduceWaitTime\""), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\"AllReduceTime\""), std::string::npos) << metrics;
}

TEST_F(DdpTrainCli, UnevenShardsInTrainingAndEvaluationEnd) {
  // 13 training samples on 2 ranks (7 + 7 with one repeated), batch 3: 3
  // batches on each rank; 13 evaluation samples: 7 and 6 batches. Per-rank
  // rng states in the checkpoint; rank 0 writes it.
  const std::string out = dir_.sub("uneven");
  auto flags = ddp_flags(corpus_, out, 3, 1);
  flags.insert(flags.end(), {"--max_train_samples", "13", "--max_steps", "-1", "--num_train_epochs",
                             "2", "--save_strategy", "epoch", "--eval_strategy", "epoch"});
  CliResult r = run_ranks(dir_, 2, flags, 180);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  nlohmann::json s = read_json(out + "/trainer_state.json");
  EXPECT_EQ(s.value("global_step", -1), 6);
  EXPECT_EQ(s.value("epoch", 0.0), 2.0);
  for (const char* f : {"checkpoint-6/rng_state.json", "checkpoint-6/rng_state_0.json",
                        "checkpoint-6/rng_state_1.json", "checkpoint-3/model.safetensors"})
    EXPECT_TRUE(fs::exists(out + "/" + f)) << f;
  // Both ends reached: a finite loss for each of the 6 steps, an evaluation at
  // the start and after each epoch, and the final one over the 13 samples
  // exactly (rank 1's 6 + rank 0's 7; none counted twice, none dropped).
  const auto loss = logged(s, "loss"), eval = logged(s, "eval_loss");
  ASSERT_EQ(loss.size(), 6u);
  for (double l : loss) EXPECT_TRUE(std::isfinite(l) && l > 0) << l;
  ASSERT_EQ(eval.size(), 3u);
  for (double l : eval) EXPECT_TRUE(std::isfinite(l) && l > 0) << l;
  EXPECT_LT(eval[2], eval[0]) << "training moved the weights";
  nlohmann::json e = read_json(out + "/eval_results.json");
  EXPECT_EQ(e.value("eval_samples", 0.0), 13.0);
  EXPECT_TRUE(std::isfinite(e.value("eval_loss", NAN)));
}

TEST_F(DdpTrainCli, ResumeOnTheSameOrAnotherWorldSizeContinuesTheRun) {
  // 2 ranks x 4 for 10 steps, saving at 4 and 8; resumed from checkpoint-4
  // on 2 ranks (bit for bit) and on 1 rank x 8 (the same global batch: the
  // shards interleave one permutation, so the same samples; to 1e-6).
  const std::string full = dir_.sub("full");
  auto flags = ddp_flags(corpus_, full, 4, 1);
  flags.insert(flags.end(), {"--save_strategy", "steps", "--save_steps", "4"});
  CliResult r = run_ranks(dir_, 2, flags);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto want = logged(read_json(full + "/trainer_state.json"), "loss");
  ASSERT_EQ(want.size(), 10u);
  for (int np : {2, 0}) {
    const std::string again = dir_.sub("again" + std::to_string(np));
    fs::copy(full, again, fs::copy_options::recursive);
    auto f = ddp_flags(corpus_, again, np == 2 ? 4 : 8, 1);
    f.insert(f.end(), {"--save_strategy", "steps", "--save_steps", "4", "--resume_from_checkpoint",
                       again + "/checkpoint-4"});
    CliResult rr = run_ranks(dir_, np, f);
    ASSERT_EQ(rr.exit_code, 0) << rr.err << rr.out;
    EXPECT_EQ(rr.err.find("will not continue exactly"), std::string::npos) << rr.err;
    const auto got = logged(read_json(again + "/trainer_state.json"), "loss");
    if (np == 2) {
      EXPECT_EQ(got, want);
    } else {
      expect_close(got, want, 1e-6, "loss resumed on 1 rank");
    }
  }
}

// Occurrences of `needle` in `text`.
size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// 15 training samples on 2 ranks x batch 4: the shards are padded to 8 + 8,
// rank 1's last sample (in each epoch's second batch) repeating the first.
// With the mask it counts zero, so the run is one process x batch 8 on the
// 15 real samples (batches of 8 and 7): the same losses and weights to 1e-6.
TEST_F(DdpTrainCli, PaddedSampleCountsZeroSoTwoRanksEqualOneProcessOnTheRealSamples) {
  const std::string one = dir_.sub("pad_one"), two = dir_.sub("pad_two");
  nlohmann::json s1, s2;
  ASSERT_NO_FATAL_FAILURE(padded_runs("pad", "15", 8, 4, 1, &s1, &s2));
  EXPECT_EQ(s2.value("global_step", -1), 4);
  const auto loss1 = logged(s1, "loss");
  ASSERT_EQ(loss1.size(), 4u);
  expect_close(logged(s2, "loss"), loss1, 1e-6, "loss");
  expect_close(logged(s2, "grad_norm"), logged(s1, "grad_norm"), 1e-5, "grad_norm");
  EXPECT_LE(max_weight_difference(two + "/model.safetensors", one + "/model.safetensors"), 1e-6);
}

// 5 samples on 2 ranks x batch 1, accumulation 2: rank 1's third batch is
// nothing but padding (position 5 of 6). Its loss is 0, not NaN; the step's
// gradient is that of sample 4 alone (one process: batch 2, windows of 2
// and 1 batches), and the logged loss is that sample's.
TEST_F(DdpTrainCli, BatchOfOnlyPaddingAddsNothingAndGivesNoNaN) {
  const std::string one = dir_.sub("only_pad_one"), two = dir_.sub("only_pad_two");
  nlohmann::json s1, s2;
  ASSERT_NO_FATAL_FAILURE(padded_runs("only_pad", "5", 2, 1, 2, &s1, &s2));
  const auto loss1 = logged(s1, "loss"), loss2 = logged(s2, "loss");
  ASSERT_EQ(loss1.size(), 4u);
  for (double l : loss2) EXPECT_TRUE(std::isfinite(l)) << l;
  expect_close(loss2, loss1, 1e-6, "loss");
  EXPECT_LE(max_weight_difference(two + "/model.safetensors", one + "/model.safetensors"), 1e-6);
}

// Resuming mid-epoch with a padded shard: 15 samples on 2 ranks x batch 2
// (4 batches per rank and epoch, the padding in rank 1's 4th), saved at step
// 3 and resumed there: 3 batches skipped, said once (by rank 0), and the
// losses are the uninterrupted run's, bit for bit.
TEST_F(DdpTrainCli, ResumeMidEpochWithPaddingSkipsTheTrainedBatches) {
  const std::string full = dir_.sub("pad_full");
  auto flags = [&](const std::string& out) {
    auto f = ddp_flags(corpus_, out, 2, 1);
    f.insert(f.end(), {"--max_train_samples", "15", "--max_steps", "-1", "--num_train_epochs", "2",
                       "--eval_on_start", "false", "--do_eval", "false", "--save_strategy", "steps",
                       "--save_steps", "3"});
    return f;
  };
  CliResult r = run_ranks(dir_, 2, flags(full));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto want = logged(read_json(full + "/trainer_state.json"), "loss");
  ASSERT_EQ(want.size(), 8u);
  const std::string again = dir_.sub("pad_again");
  fs::copy(full, again, fs::copy_options::recursive);
  auto f = flags(again);
  f.insert(f.end(), {"--resume_from_checkpoint", again + "/checkpoint-3"});
  CliResult rr = run_ranks(dir_, 2, f);
  ASSERT_EQ(rr.exit_code, 0) << rr.err << rr.out;
  EXPECT_EQ(count_of(rr.err, "[Trainer] skipping 3 batches of epoch 0 at the sampler"), 1u)
      << rr.err;
  EXPECT_EQ(logged(read_json(again + "/trainer_state.json"), "loss"), want);
}

// Messages that are the same on every rank are printed once (rank 0): the
// --bf16 precision decision, PEFT's fan_in_fan_out warning (GPT-2's Conv1D
// targets) and the data line, on 2 ranks of a LoRA run.
TEST_F(DdpTrainCli, MessagesTheSameOnEveryRankArePrintedOnce) {
  const std::string base = dir_.sub("lora_base");
  auto train = ddp_flags(corpus_, base, 8, 1);
  train.insert(train.end(), {"--max_steps", "1", "--eval_on_start", "false", "--do_eval", "false"});
  CliResult t = run_ranks(dir_, 0, train);
  ASSERT_EQ(t.exit_code, 0) << t.err << t.out;
  std::vector<std::string> lora = {"train",
                                   "--model_name_or_path",
                                   base,
                                   "--use_lora",
                                   "--lora_r",
                                   "2",
                                   "--lora_alpha",
                                   "4",
                                   "--bf16",
                                   "true",
                                   "--train_file",
                                   corpus_,
                                   "--block_size",
                                   "16",
                                   "--max_train_samples",
                                   "16",
                                   "--per_device_train_batch_size",
                                   "4",
                                   "--max_steps",
                                   "2",
                                   "--save_strategy",
                                   "no",
                                   "--report_to",
                                   "none",
                                   "--device",
                                   "lazy",
                                   "--disable_tqdm",
                                   "--output_dir",
                                   dir_.sub("lora_out")};
  CliResult r = run_ranks(dir_, 2, lora);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(count_of(r.err, "[Trainer] precision: "), 1u) << r.err;
  EXPECT_EQ(count_of(r.err, "[lora] warning: fan_in_fan_out set to True"), 1u) << r.err;
  // Issue 42 row 12: the data line (the training file's token cache) once.
  EXPECT_EQ(count_of(r.out, "[data] "), 1u) << r.out;
}

TEST_F(DdpTrainCli, MismatchedFlagsOrModelOnOneRankStopAtStartUp) {
  // mpirun's MPMD form gives rank 1 other flags: the start-up check names them.
  auto mpmd = [&](const std::vector<std::string>& extra) {
    const std::string out = dir_.sub("mismatch");
    fs::remove_all(out);
    std::string zero = shell_quote(loom_binary_path()), one;
    for (const std::string& a : ddp_flags(corpus_, out, 4, 1)) zero += " " + shell_quote(a);
    one = zero;
    for (const std::string& a : extra) one += " " + shell_quote(a);
    const std::string err = dir_.sub("mismatch_err.txt");
    const std::string cmd =
        "OMP_NUM_THREADS=1 timeout -k 5 60 mpirun --allow-run-as-root "
        "--oversubscribe --bind-to none -x OMP_NUM_THREADS -np 1 " +
        zero + " : -np 1 " + one + " >/dev/null 2>" + shell_quote(err) + " </dev/null";
    const int status = std::system(cmd.c_str());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    EXPECT_NE(code, 0);
    EXPECT_NE(code, 124) << "hung";
    return read_cli_file(err);
  };
  // Caught by the launch check of the given flags (tools/loom/launch.h)
  // before any data is read; the Trainer compares the resolved arguments and
  // the parameters again (a different model behind the same flags).
  const std::string args = mpmd({"--learning_rate", "0.4"});
  EXPECT_NE(args.find("arguments differ between ranks"), std::string::npos) << args;
  EXPECT_NE(args.find("learning_rate"), std::string::npos) << args;
  const std::string model = mpmd({"--config_overrides", "n_layer=1,n_embd=16,n_head=2"});
  EXPECT_NE(model.find("differ between ranks"), std::string::npos) << model;
  EXPECT_NE(model.find("n_layer=1"), std::string::npos) << model;
}

TEST_F(DdpTrainCli, OtherDataBehindTheSameFlagsStopsAtStartUp) {
  // Each rank's working directory holds its own data.txt (a machine with a
  // stale copy): same flags, fewer samples on rank 1. Without the check the
  // shards were uneven: a hang until --ddp_timeout at the epoch's end, or a
  // silent mix with --max_steps.
  std::ifstream in(corpus_);
  std::string line, all, part;
  for (int i = 0; std::getline(in, line); ++i) (i < 40 ? part : all) += line + "\n";
  const std::string wd0 = dir_.sub("wd0"), wd1 = dir_.sub("wd1");
  fs::create_directories(wd0);
  fs::create_directories(wd1);
  std::ofstream(wd0 + "/data.txt") << part << all;
  std::ofstream(wd1 + "/data.txt") << part;
  std::string flags;
  for (const std::string& a : ddp_flags("data.txt", dir_.sub("other_data"), 4, 1))
    flags += " " + shell_quote(a);
  const std::string bin = shell_quote(loom_binary_path()), err = dir_.sub("other_data_err.txt");
  const std::string cmd =
      "OMP_NUM_THREADS=1 timeout -k 5 60 mpirun --allow-run-as-root --oversubscribe "
      "--bind-to none -x OMP_NUM_THREADS -np 1 --wdir " +
      shell_quote(wd0) + " " + bin + flags + " : -np 1 --wdir " + shell_quote(wd1) + " " + bin +
      flags + " >/dev/null 2>" + shell_quote(err) + " </dev/null";
  const int status = std::system(cmd.c_str());
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  EXPECT_NE(code, 0);
  EXPECT_NE(code, 124) << "hung";
  const std::string text = read_cli_file(err);
  EXPECT_NE(text.find("dataset sizes (every rank must read the same data) differ between ranks"),
            std::string::npos)
      << text;
}

TEST_F(DdpTrainCli, EvaluateWithDropLastOnTwoRanksEqualsOneProcessAndPrintsOnce) {
  // --dataloader_drop_last drops the last partial batch of the whole set
  // (one process keeps floor(n / 4) * 4 rows), not one per rank: 13 rows
  // keep 12 (a rank dropping its own 7- and 6-row remainders kept 8); 5 rows
  // keep 4 (each rank's 3 and 2 rows made no full batch: no batch at all).
  const std::string model = dir_.sub("model");
  auto train = ddp_flags(corpus_, model, 8, 1);
  train.insert(train.end(), {"--max_steps", "2", "--eval_on_start", "false"});
  CliResult t = run_ranks(dir_, 0, train);
  ASSERT_EQ(t.exit_code, 0) << t.err << t.out;
  for (const char* rows : {"13", "5"}) {
    auto eval_flags = [&](const std::string& out) {
      return std::vector<std::string>{"evaluate",
                                      "--model_name_or_path",
                                      model,
                                      "--train_file",
                                      corpus_,
                                      "--validation_split_percentage",
                                      "20",
                                      "--block_size",
                                      "16",
                                      "--max_eval_samples",
                                      rows,
                                      "--per_device_eval_batch_size",
                                      "4",
                                      "--dataloader_drop_last",
                                      "true",
                                      "--device",
                                      "lazy",
                                      "--disable_tqdm",
                                      "--report_to",
                                      "none",
                                      "--output_dir",
                                      out};
    };
    const std::string one = dir_.sub(std::string("eval1_") + rows);
    const std::string two = dir_.sub(std::string("eval2_") + rows);
    CliResult r1 = run_ranks(dir_, 0, eval_flags(one));
    ASSERT_EQ(r1.exit_code, 0) << r1.err << r1.out;
    CliResult r2 = run_ranks(dir_, 2, eval_flags(two));
    ASSERT_EQ(r2.exit_code, 0) << r2.err << r2.out;
    // Rank 0 alone prints the metrics (and writes eval_results.json).
    const std::string banner = "***** eval metrics *****";
    ASSERT_NE(r2.out.find(banner), std::string::npos) << r2.out;
    EXPECT_EQ(r2.out.find(banner), r2.out.rfind(banner)) << r2.out;
    nlohmann::json e1 = read_json(one + "/eval_results.json");
    nlohmann::json e2 = read_json(two + "/eval_results.json");
    ASSERT_FALSE(e1.is_discarded() || e2.is_discarded());
    ASSERT_TRUE(e1.contains("eval_loss")) << e1.dump();
    ASSERT_TRUE(std::isfinite(e1.value("eval_loss", NAN))) << e1.dump();
    for (const auto& [key, value] : e1.items()) {
      if (key == "eval_runtime" || key.find("_per_second") != std::string::npos) continue;
      ASSERT_TRUE(e2.contains(key)) << key;
      expect_close({e2[key].get<double>()}, {value.get<double>()}, 1e-6, key + " " + rows);
    }
  }
}

TEST_F(DdpTrainCli, AutocastDecisionDifferingBetweenRanksStopsAtStartUp) {
  // --bf16 autocasts only where the host's CPU has native bf16 matmuls;
  // LOOM_AUTOCAST_NATIVE stands in for two different hosts.
  std::string loom = shell_quote(loom_binary_path());
  auto flags = ddp_flags(corpus_, dir_.sub("bf16"), 4, 1);
  flags.insert(flags.end(), {"--bf16", "true", "--eval_on_start", "false"});
  for (const std::string& a : flags) loom += " " + shell_quote(a);
  const std::string err = dir_.sub("bf16_err.txt");
  const std::string cmd =
      "OMP_NUM_THREADS=1 timeout -k 5 60 mpirun --allow-run-as-root "
      "--oversubscribe --bind-to none -x OMP_NUM_THREADS -np 1 env LOOM_AUTOCAST_NATIVE=1 " +
      loom + " : -np 1 env LOOM_AUTOCAST_NATIVE=0 " + loom + " >/dev/null 2>" + shell_quote(err) +
      " </dev/null";
  const int status = std::system(cmd.c_str());
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  const std::string text = read_cli_file(err);
  EXPECT_NE(code, 0) << text;
  EXPECT_NE(code, 124) << "hung";
  EXPECT_NE(text.find("autocast decisions"), std::string::npos) << text;
  EXPECT_NE(text.find("differ between ranks"), std::string::npos) << text;
  EXPECT_NE(text.find("autocast bf16 off"), std::string::npos) << text;
}

TEST_F(DdpTrainCli, FailedSaveOnRankZeroEndsTheJob) {
  // Rank 0 may write files of 100 KiB at most (RLIMIT_FSIZE, SIGXFSZ
  // ignored: writes fail with EFBIG, as on a full disk); its first
  // checkpoint (step 2, a 3 MB model) fails. Rank 1 meanwhile goes on to
  // the next step's all-reduce: the job must end, not wait there.
  const std::string out = dir_.sub("efbig");
  auto flags = ddp_flags(corpus_, out, 4, 1);
  flags.insert(flags.end(), {"--save_strategy", "steps", "--save_steps", "2"});
  std::string loom = shell_quote(loom_binary_path());
  for (const std::string& a : flags) loom += " " + shell_quote(a);
  const std::string limited = "bash -c " + shell_quote("trap '' XFSZ; ulimit -f 100; exec " + loom);
  const std::string cmd =
      "OMP_NUM_THREADS=1 timeout -k 5 120 mpirun --allow-run-as-root "
      "--oversubscribe --bind-to none -x OMP_NUM_THREADS -np 1 " +
      limited + " : -np 1 " + loom + " >" + shell_quote(dir_.sub("efbig_out.txt")) + " 2>" +
      shell_quote(dir_.sub("efbig_err.txt")) + " </dev/null";
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system(cmd.c_str());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  const std::string err = read_cli_file(dir_.sub("efbig_err.txt"));
  EXPECT_NE(code, 0) << err;
  EXPECT_NE(code, 124) << "the job hung (killed by timeout after " << seconds << " s)\n" << err;
  // Rank 0's own message (the mpirun banners come around it).
  EXPECT_NE(err.find("loom: error: [rank 0]"), std::string::npos) << err;
  EXPECT_NE(err.find("model.safetensors"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(out + "/checkpoint-2")) << "a failed save left a checkpoint";
}

TEST_F(DdpTrainCli, KilledRankEndsTheJobWithinSixtySeconds) {
  expect_killed_rank_ends_job(dir_, ddp_flags(corpus_, dir_.sub("killed"), 4, 1));
}

}  // namespace
}  // namespace loom::testing
