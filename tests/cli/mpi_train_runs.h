// Helpers of the `loom train` tests under mpirun (tests/cli/ddp_train_cli_test.cpp,
// fsdp_train_cli_test.cpp): run N ranks of the loom binary, the flags of a
// tiny dropout-free GPT-2 run, read trainer_state.json's log history, and
// compare losses and saved weights. Assumes mpirun (Open MPI) is on PATH;
// callers skip first when it, the loom binary or MPI support is missing.
#pragma once

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
#include "cli/tiny_train.h"
#include "loom/safetensors.h"

namespace loom::testing {

// `np` ranks of `loom args...` (np 0: plain loom, no mpirun), one thread
// each, killed after `timeout_s` (exit 124 then).
// `env` ("NAME=VALUE") is exported to every rank (mpirun -x).
inline CliResult run_ranks(const TempDir& dir, int np, const std::vector<std::string>& args,
                           int timeout_s = 240, const std::vector<std::string>& env = {}) {
  std::string cmd = "OMP_NUM_THREADS=1 timeout -k 5 " + std::to_string(timeout_s) + " ";
  // Under the sanitizer build: Open MPI keeps its allocations until exit (its
  // unloaded components show as "<unknown module>"), which LeakSanitizer would
  // report as loom's and turn into exit code 1 (as tests/distributed/mpi_case.sh).
  if (np > 0)
    cmd +=
        "env ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" mpirun "
        "--allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS -np " +
        std::to_string(np) + " ";
  for (const std::string& e : env) cmd += "-x " + shell_quote(e) + " ";
  cmd += shell_quote(loom_binary_path());
  for (const std::string& a : args) cmd += " " + shell_quote(a);
  const std::string out = dir.sub("mpi_stdout.txt"), err = dir.sub("mpi_stderr.txt");
  cmd += " >" + shell_quote(out) + " 2>" + shell_quote(err) + " </dev/null";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_cli_file(out);
  r.err = read_cli_file(err);
  return r;
}

// Flags of a tiny dropout-free GPT-2 run: 64 training blocks of 16 tokens,
// 13 evaluation blocks (odd: uneven shards on 2 ranks), 10 steps of SGD.
// SGD, not AdamW: some gradients are zero in exact arithmetic (the attention
// key bias cannot change a softmax), so both runs hold only rounding noise
// there (~1e-9), which AdamW's m / sqrt(v) turns into steps of the size of
// the learning rate — different noise, different weights, in any two
// summation orders (measured: max |diff| 2e-6 after 10 AdamW steps, while
// the losses agree to 1e-7).
inline std::vector<std::string> ddp_flags(const std::string& corpus, const std::string& out,
                                          int batch, int ga) {
  return {"train",
          "--model_type",
          "gpt2",
          "--config_overrides",
          "n_layer=2,n_embd=16,n_head=2,n_positions=32,resid_pdrop=0,embd_pdrop=0,attn_pdrop=0",
          "--tokenizer_name",
          kGpt2Tokenizer,
          "--train_file",
          corpus,
          "--validation_split_percentage",
          "20",
          "--block_size",
          "16",
          "--max_train_samples",
          "64",
          "--max_eval_samples",
          "13",
          "--output_dir",
          out,
          "--per_device_train_batch_size",
          std::to_string(batch),
          "--gradient_accumulation_steps",
          std::to_string(ga),
          "--per_device_eval_batch_size",
          "1",
          "--max_steps",
          "10",
          "--logging_steps",
          "1",
          "--optim",
          "sgd",
          "--learning_rate",
          "0.5",
          "--eval_strategy",
          "no",
          "--do_eval",
          "--eval_on_start",
          "true",
          "--save_strategy",
          "no",
          "--report_to",
          "none",
          "--device",
          "lazy",
          "--disable_tqdm",
          "--seed",
          "7"};
}

inline nlohmann::json read_json(const std::string& path) {
  return nlohmann::json::parse(read_cli_file(path), nullptr, /*allow_exceptions=*/false);
}

inline std::vector<double> logged(const nlohmann::json& state, const std::string& key) {
  std::vector<double> v;
  for (const auto& e : state["log_history"])
    if (e.contains(key)) v.push_back(e[key].get<double>());
  return v;
}

inline void expect_close(const std::vector<double>& a, const std::vector<double>& b, double rel,
                         const std::string& what) {
  ASSERT_FALSE(b.empty()) << what << ": nothing logged, nothing compared";
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_LE(std::fabs(a[i] - b[i]), rel * std::fabs(b[i]) + 1e-12)
        << what << "[" << i << "]: 2 ranks " << a[i] << ", 1 rank " << b[i];
}

// Largest max|a - b| / max|b| of a tensor, over every weight of two model.safetensors.
inline double max_weight_difference(const std::string& a_path, const std::string& b_path) {
  auto a = safetensors::File::open(a_path);
  auto b = safetensors::File::open(b_path);
  double worst = 0;
  for (const auto& ta : a.tensors()) {
    const auto& tb = b.at(ta.name);
    EXPECT_EQ(ta.dtype, DType::f32) << ta.name;
    EXPECT_EQ(ta.shape, tb.shape) << ta.name;
    std::vector<float> va(ta.nbytes / 4), vb(tb.nbytes / 4);
    std::memcpy(va.data(), a.data(ta).data(), ta.nbytes);
    std::memcpy(vb.data(), b.data(tb).data(), tb.nbytes);
    double diff = 0, scale = 1e-30;
    for (size_t i = 0; i < va.size() && i < vb.size(); ++i) {
      diff = std::max(diff, std::fabs(static_cast<double>(va[i]) - vb[i]));
      scale = std::max(scale, std::fabs(static_cast<double>(vb[i])));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

// Starts 2 ranks of `loom flags...` (with --max_steps 100000), each writing
// its pid (exec keeps it); once rank 0 has logged a step, rank 1 is killed
// with SIGKILL: mpirun must end the job, non-zero, within 60 s.
inline void expect_killed_rank_ends_job(const TempDir& dir, std::vector<std::string> flags) {
  flags.insert(flags.end(), {"--max_steps", "100000"});
  std::string loom = shell_quote(loom_binary_path());
  for (const std::string& a : flags) loom += " " + shell_quote(a);
  const std::string pid_dir = dir.sub("pids");
  std::filesystem::create_directories(pid_dir);
  const std::string rank_cmd = "bash -c " + shell_quote("echo $$ > " + shell_quote(pid_dir) +
                                                        "/$OMPI_COMM_WORLD_RANK; exec " + loom);
  const std::string log = dir.sub("killed_out.txt"), err_path = dir.sub("killed_err.txt");
  const std::string cmd =
      "OMP_NUM_THREADS=1 exec timeout -k 5 150 mpirun --allow-run-as-root "
      "--oversubscribe --bind-to none -x OMP_NUM_THREADS -np 2 " +
      rank_cmd + " >" + shell_quote(log) + " 2>" + shell_quote(err_path) + " </dev/null";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  bool exited = false;
  auto poll_exit = [&] {
    if (!exited && ::waitpid(child, &status, WNOHANG) == child) exited = true;
    return exited;
  };
  // Wait (up to 120 s) for a logged training step.
  for (int i = 0; i < 1200 && !poll_exit(); ++i) {
    if (read_cli_file(log).find("'loss'") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(exited) << "the job ended before a step was logged:\n" << read_cli_file(err_path);
  const std::string pid_text = read_cli_file(pid_dir + "/1");
  ASSERT_FALSE(pid_text.empty());
  const pid_t rank1 = static_cast<pid_t>(std::stol(pid_text));
  ASSERT_EQ(::kill(rank1, SIGKILL), 0);
  const auto killed_at = std::chrono::steady_clock::now();
  while (!poll_exit()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  EXPECT_NE(code, 0);
  EXPECT_NE(code, 124) << "the job hung until the timeout";
  EXPECT_LT(seconds, 60.0);
  EXPECT_FALSE(read_cli_file(err_path).empty()) << "no message said why the job ended";
}

}  // namespace loom::testing
