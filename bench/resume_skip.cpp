// bench/resume_skip: what resuming mid-epoch costs before the first trained
// batch (transformers#8876). A shuffled in-memory dataset of --examples
// token rows (--tokens each), batch --batch; resuming after --skip_examples
// examples of the epoch. Two ways, each timed to the first batch after the
// skipped ones (median over --rounds), with the Dataset::get calls made:
//   sampler   DataLoader::stream(epoch, skip): the skipped batches are
//             dropped as index lists (what the Trainer does)
//   loading   stream(epoch) and next() skip times: every skipped batch is
//             fetched and collated, then thrown away (the old way)
//   bench_resume_skip --examples 100000 --skip_examples 91000 --batch 8
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "loom/dataloader.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace data = loom::data;

struct Options {
  int64_t examples = 100000, tokens = 32, batch = 8, skip_examples = 91000;
  int rounds = 3;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const int64_t v = std::atoll(argv[i + 1]);
    if (k == "--examples")
      o.examples = v;
    else if (k == "--tokens")
      o.tokens = v;
    else if (k == "--batch")
      o.batch = v;
    else if (k == "--skip_examples")
      o.skip_examples = v;
    else if (k == "--rounds")
      o.rounds = static_cast<int>(v);
  }
  return o;
}

// Rows made on demand (as a tokenized file on disk would be read), counted.
struct CountingDataset : data::Dataset {
  int64_t n, tokens;
  mutable std::atomic<int64_t> gets{0};
  CountingDataset(int64_t n, int64_t tokens) : n(n), tokens(tokens) {}
  int64_t size() const override { return n; }
  data::Example get(int64_t i) const override {
    ++gets;
    data::Example e;
    for (int64_t j = 0; j < tokens; ++j) e.input_ids.push_back((i * 31 + j * 7) % 50257);
    e.labels = e.input_ids;
    return e;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  auto ds = std::make_shared<CountingDataset>(o.examples, o.tokens);
  auto collator = std::make_shared<data::PaddingCollator>(data::PadOptions{});
  data::DataLoader loader(ds, collator, {.batch_size = o.batch, .shuffle = true, .seed = 42});
  const int64_t skip = o.skip_examples / o.batch;
  std::vector<double> sampler_ms, loading_ms;
  int64_t sampler_gets = 0, loading_gets = 0;
  for (int r = 0; r < o.rounds; ++r) {
    ds->gets = 0;
    auto t0 = Clock::now();
    auto s = loader.stream(1, skip);
    s->next();
    sampler_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    sampler_gets = ds->gets.load();

    ds->gets = 0;
    t0 = Clock::now();
    auto l = loader.stream(1);
    for (int64_t i = 0; i < skip; ++i) l->next();
    l->next();
    loading_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    loading_gets = ds->gets.load();
  }
  std::printf("examples %lld, batch %lld, skipping %lld batches (%lld examples)\n",
              static_cast<long long>(o.examples), static_cast<long long>(o.batch),
              static_cast<long long>(skip), static_cast<long long>(skip * o.batch));
  std::printf("%-8s %12s %14s\n", "skip", "ms_to_batch", "Dataset::get");
  std::printf("%-8s %12.2f %14lld\n", "sampler", median(sampler_ms),
              static_cast<long long>(sampler_gets));
  std::printf("%-8s %12.2f %14lld\n", "loading", median(loading_ms),
              static_cast<long long>(loading_gets));
  return 0;
}
