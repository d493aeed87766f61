// Helpers for the tests of the `loom` binary (tests/cli/): run it with
// arguments, capture exit code, stdout and stderr, and read files it wrote.
// Assumes the build defines LOOM_BINARY_DIR (the folder holding `loom`) and
// LOOM_SOURCE_DIR (for assets/), as CMakeLists.txt does for loom_tests.
#pragma once

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/temp_dir.h"

namespace loom::testing {

/// What one run of the `loom` binary gave.
struct CliResult {
  int exit_code = -1;
  std::string out;  ///< stdout
  std::string err;  ///< stderr
};

/// Path of the `loom` binary built next to the tests ("" when not built).
inline std::string loom_binary_path() {
  std::string p = std::string(LOOM_BINARY_DIR) + "/loom";
  return std::filesystem::exists(p) ? p : std::string();
}

/// The whole file as text ("" when it cannot be read).
inline std::string read_cli_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Single-quotes `s` for /bin/sh.
inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// Runs `loom args...` with stdout and stderr captured into files of `dir`;
/// `shell_prefix` (e.g. "ulimit -v 8388608;") runs first, in the same shell.
inline CliResult run_loom_cli(const TempDir& dir, const std::vector<std::string>& args,
                              const std::string& shell_prefix = "") {
  std::string cmd = shell_prefix + " exec " + shell_quote(loom_binary_path());
  for (const std::string& a : args) cmd += " " + shell_quote(a);
  const std::string out = dir.sub("cli_stdout.txt"), err = dir.sub("cli_stderr.txt");
  cmd += " >" + shell_quote(out) + " 2>" + shell_quote(err) + " </dev/null";
  int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_cli_file(out);
  r.err = read_cli_file(err);
  return r;
}

/// Number of '\n'-terminated lines in `s`.
inline int count_cli_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

/// Exit code 1 and exactly one stderr line, starting "loom: error: " and
/// containing `needle`: how every bad input must end.
inline void expect_one_error_line(const CliResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(count_cli_lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("loom: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

}  // namespace loom::testing
