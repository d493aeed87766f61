// Tokenizer throughput: tokens/s of loom's GPT-2 and BERT tokenizers on the Jane Austen
// corpus (assets/corpora/austen/*.txt, split into paragraphs), on one thread, against the
// Hugging Face `tokenizers` library on the same paragraphs in the same run
// (bench/tokenizer_peer.py, with RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false). Both
// load the same tokenizer.json files and must produce identical ids (checked with an id
// checksum). Times are CPU seconds of the encoding thread/process, best of REPEATS runs,
// so that other load on the machine distorts them less than wall time would.
//
// Usage: bench_tokenizer [REPEATS=5]. The repository root is found from this file's path
// (__FILE__) unless LOOM_SOURCE_DIR is set in the environment; python3 must be on PATH
// with `tokenizers` installed for the peer numbers.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "loom/tokenizer.h"

namespace {

namespace fs = std::filesystem;

std::string repo_root() {
  if (const char* env = std::getenv("LOOM_SOURCE_DIR")) return env;
  return fs::path(__FILE__).parent_path().parent_path().string();
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double wall_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Paragraphs (blocks separated by blank lines) of all corpus files, in name order.
std::vector<std::string> load_paragraphs(const std::string& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".txt") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> paragraphs;
  for (const fs::path& f : files) {
    std::ifstream in(f);
    std::string line, current;
    while (std::getline(in, line)) {
      if (line.empty()) {
        if (!current.empty()) paragraphs.push_back(current);
        current.clear();
      } else {
        current += current.empty() ? line : "\n" + line;
      }
    }
    if (!current.empty()) paragraphs.push_back(current);
  }
  return paragraphs;
}

uint64_t checksum(const std::vector<loom::Encoding>& encodings) {
  const uint64_t mod = (uint64_t{1} << 61) - 1;
  unsigned __int128 h = 0;
  for (const loom::Encoding& e : encodings) {
    for (int32_t id : e.ids) h = (h * 1000003 + static_cast<uint64_t>(id) + 1) % mod;
  }
  return static_cast<uint64_t>(h);
}

struct Result {
  int64_t tokens = 0;
  uint64_t checksum = 0;
  double cpu_s = 0;
  double wall_s = 0;
};

Result run_loom(const loom::Tokenizer& tok, const std::vector<std::string>& texts, int repeats,
                bool offsets, int threads) {
  loom::EncodeOptions opts;
  opts.add_special_tokens = false;
  opts.return_offsets = offsets;
  Result r;
  r.cpu_s = r.wall_s = 1e30;
  for (int i = 0; i < repeats; ++i) {
    double c0 = thread_cpu_seconds(), w0 = wall_seconds();
    std::vector<loom::Encoding> out = tok.encode_batch(texts, opts, threads);
    double c1 = thread_cpu_seconds(), w1 = wall_seconds();
    r.cpu_s = std::min(r.cpu_s, c1 - c0);
    r.wall_s = std::min(r.wall_s, w1 - w0);
    r.tokens = 0;
    for (const loom::Encoding& e : out) r.tokens += static_cast<int64_t>(e.ids.size());
    r.checksum = checksum(out);
  }
  return r;
}

bool run_peer(const std::string& root, const std::string& tokenizer_json,
              const std::string& texts_file, int repeats, Result& r, std::string& version) {
  std::string cmd = "RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false python3 '" + root +
                    "/bench/tokenizer_peer.py' '" + tokenizer_json + "' '" + texts_file + "' " +
                    std::to_string(repeats) + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return false;
  std::string output;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) output.append(buffer, n);
  int status = pclose(pipe);
  size_t brace = output.rfind('{');
  if (status != 0 || brace == std::string::npos) {
    std::cerr << "peer failed:\n" << output << "\n";
    return false;
  }
  nlohmann::json j = nlohmann::json::parse(output.substr(brace));
  r.tokens = j["tokens"];
  r.checksum = j["checksum"];
  r.cpu_s = j["best_cpu_s"];
  r.wall_s = j["best_wall_s"];
  version = j["version"];
  return true;
}

void print_row(const std::string& name, const std::string& impl, const Result& r) {
  std::printf("%-6s %-28s %10lld %9.3f %9.3f %12.0f\n", name.c_str(), impl.c_str(),
              static_cast<long long>(r.tokens), r.cpu_s, r.wall_s,
              static_cast<double>(r.tokens) / r.cpu_s);
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const std::string root = repo_root();
  std::vector<std::string> texts = load_paragraphs(root + "/assets/corpora/austen");
  size_t bytes = 0;
  for (const std::string& t : texts) bytes += t.size();
  std::string texts_file =
      (fs::temp_directory_path() / "loom_bench_tokenizer_texts.jsonl").string();
  {
    std::ofstream out(texts_file);
    for (const std::string& t : texts) out << nlohmann::json(t).dump() << "\n";
  }
  std::printf("corpus: %zu paragraphs, %zu bytes (assets/corpora/austen), best of %d runs\n",
              texts.size(), bytes, repeats);
  std::printf("%-6s %-28s %10s %9s %9s %12s\n", "model", "implementation", "tokens", "cpu_s",
              "wall_s", "tokens/cpu_s");
  int exit_code = 0;
  for (const std::string name : {"gpt2", "bert"}) {
    const std::string path = root + "/tests/fixtures/tokenizers/" + name + "/tokenizer.json";
    loom::Tokenizer tok = loom::Tokenizer::from_file(path);
    Result fast = run_loom(tok, texts, repeats, false, 1);
    Result full = run_loom(tok, texts, repeats, true, 1);
    print_row(name, "loom, 1 thread", fast);
    print_row(name, "loom, 1 thread, offsets", full);
    int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    Result par = run_loom(tok, texts, repeats, false, hw);
    std::printf("%-6s %-28s %10lld %9s %9.3f %12.0f (tokens/wall_s)\n", name.c_str(),
                ("loom, " + std::to_string(hw) + " threads").c_str(),
                static_cast<long long>(par.tokens), "-", par.wall_s,
                static_cast<double>(par.tokens) / par.wall_s);
    Result peer;
    std::string version;
    if (run_peer(root, path, texts_file, repeats, peer, version)) {
      print_row(name, "tokenizers " + version + ", 1 thread", peer);
      bool same = peer.tokens == fast.tokens && peer.checksum == fast.checksum;
      std::printf(
          "%-6s ids identical: %s; speed ratio loom/tokenizers: %.2fx (with offsets: "
          "%.2fx)\n",
          name.c_str(), same ? "yes" : "NO", peer.cpu_s / fast.cpu_s, peer.cpu_s / full.cpu_s);
      if (!same) exit_code = 1;
    } else {
      std::printf("%-6s tokenizers peer unavailable\n", name.c_str());
    }
  }
  std::remove(texts_file.c_str());
  return exit_code;
}
