// `loom train` on a .txt file through the token cache (loom/token_cache.h),
// through the built binary: the first run tokenizes and says so, the second
// is a cache hit, and both give the example counts of the in-memory path
// (run_clm's group_texts over the lines after the first 20 %, computed here
// with the tokenizer) and the same training losses; a changed file is
// tokenized again.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <regex>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "cli/tiny_train.h"
#include "common/scoped_env.h"
#include "io/text_files.h"
#include "loom/dataset.h"
#include "loom/tokenizer.h"

namespace loom::testing {
namespace {

// Examples run_clm makes of `lines` with the GPT-2 tokenizer.
size_t blocks_in_memory(const std::vector<std::string>& lines, int64_t block) {
  Tokenizer tok = Tokenizer::from_pretrained(kGpt2Tokenizer);
  EncodeOptions o = tok.default_options();
  o.add_special_tokens = false;
  std::vector<std::vector<int64_t>> ids;
  for (const Encoding& e : tok.encode_batch(lines, o)) ids.emplace_back(e.ids.begin(), e.ids.end());
  return data::group_texts(ids, block).size();
}

std::vector<double> token_cache_cli_losses(const std::string& out_dir) {
  auto state = nlohmann::json::parse(read_cli_file(out_dir + "/trainer_state.json"));
  std::vector<double> v;
  for (const auto& e : state["log_history"])
    if (e.contains("loss")) v.push_back(e["loss"].get<double>());
  return v;
}

TEST(TokenCacheCli, SecondRunIsACacheHitWithTheSameExamplesAndLosses) {
  if (loom_binary_path().empty()) GTEST_SKIP() << "the loom binary is not built";
  TempDir dir;
  ScopedEnv cache("LOOM_DATASETS_CACHE", dir.sub("cache"));
  const std::string corpus = write_tiny_corpus(dir, 300);
  const std::vector<std::string> lines = io::read_text_lines(corpus, true);
  const auto held = static_cast<size_t>(std::llround(lines.size() * 20 / 100.0));
  const size_t want_train = blocks_in_memory(
      std::vector(lines.begin() + static_cast<std::ptrdiff_t>(held), lines.end()), 32);
  const size_t want_eval = blocks_in_memory(
      std::vector(lines.begin(), lines.begin() + static_cast<std::ptrdiff_t>(held)), 32);
  ASSERT_GT(want_eval, 0u);
  const std::string counts =
      std::to_string(want_train) + " train / " + std::to_string(want_eval) + " eval examples";
  std::vector<std::vector<double>> runs;
  for (int run = 0; run < 2; ++run) {
    const std::string out = dir.sub("out" + std::to_string(run));
    auto flags = tiny_train_flags(corpus, out);
    flags.insert(flags.end(),
                 {"--max_steps", "3", "--logging_steps", "1", "--save_strategy", "no"});
    CliResult r = run_loom_cli(dir, flags);
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_NE(r.out.find(counts), std::string::npos) << counts << "\n" << r.out;
    const std::string what = run == 0 ? "tokenized " : "token cache hit ";
    EXPECT_NE(r.out.find("[data] --train_file '" + corpus + "': " + what), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("[data] the validation split of '" + corpus + "' (20%): " + what),
              std::string::npos)
        << r.out;
    runs.push_back(token_cache_cli_losses(out));
  }
  ASSERT_EQ(runs[0].size(), 3u);
  EXPECT_EQ(runs[0], runs[1]);
  // A changed corpus is tokenized again (stale), not read from the old cache.
  write_tiny_corpus(dir, 200);
  auto flags = tiny_train_flags(corpus, dir.sub("out2"));
  flags.insert(flags.end(), {"--max_steps", "1", "--save_strategy", "no"});
  CliResult r = run_loom_cli(dir, flags);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("(rebuilt: stale: "), std::string::npos) << r.out;
}

}  // namespace
}  // namespace loom::testing
