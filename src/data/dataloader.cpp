// DataLoader (loom/dataloader.h): an epoch's plan (the sampler's indices cut
// into batches), a serial stream for num_workers = 0 and a worker stream that
// prepares batches on threads, hands them over in order, keeps at most
// num_workers * prefetch_factor in flight, and forwards the first failure.
// The sampler's padding flags travel with each batch to the collator
// (CollateContext::padding).
// Assumes Dataset::get and Collator::collate are safe to call concurrently.
#include "loom/dataloader.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>

#include "loom/error.h"

namespace loom::data {
namespace {

// What a stream needs to make the i-th batch it hands out: batch number
// first + i of the epoch (the batches before `first` were skipped).
struct EpochPlan {
  std::shared_ptr<const Dataset> dataset;
  std::shared_ptr<const Collator> collator;
  int64_t epoch = 0;
  int64_t first = 0;                          // batch number of batches[0] in the epoch
  std::vector<std::vector<int64_t>> batches;  // dataset indices per batch
  // Per batch, the sampler's padding flags of its examples (Sampler::padding);
  // empty when none of them is padding.
  std::vector<std::vector<bool>> padding;

  Batch make(int64_t i) const {
    const std::vector<int64_t>& indices = batches[static_cast<size_t>(i)];
    std::vector<Example> examples;
    examples.reserve(indices.size());
    const int64_t n = dataset->size();
    for (int64_t index : indices) {
      LOOM_CHECK(index >= 0 && index < n, "[DataLoader] sampler index ", index,
                 " is outside the dataset [0, ", n, ")");
      examples.push_back(dataset->get(index));
    }
    return collator->collate(examples, {epoch, first + i, padding[static_cast<size_t>(i)]});
  }
};

// Rethrows a failure from batch `batch` as loom::Error: a loom::Error keeps
// its message unchanged, anything else is wrapped with the batch number.
[[noreturn]] void rethrow_as_error(const std::exception_ptr& error, int64_t batch) {
  try {
    std::rethrow_exception(error);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail("[DataLoader] preparing batch ", batch, " failed: ", e.what());
  } catch (...) {
    fail("[DataLoader] preparing batch ", batch, " failed with a non-standard exception");
  }
}

// num_workers == 0: each batch is made inside next().
class SerialStream : public BatchStream {
 public:
  explicit SerialStream(EpochPlan plan) : plan_(std::move(plan)) {}
  std::optional<Batch> next() override {
    if (done_ || next_ >= static_cast<int64_t>(plan_.batches.size())) return std::nullopt;
    int64_t i = next_++;
    try {
      return plan_.make(i);
    } catch (...) {
      done_ = true;
      rethrow_as_error(std::current_exception(), plan_.first + i);
    }
  }

 private:
  EpochPlan plan_;
  int64_t next_ = 0;
  bool done_ = false;
};

// num_workers > 0: workers claim batch numbers in order and park results in
// `ready_`; next() takes them in order.
class WorkerStream : public BatchStream {
 public:
  WorkerStream(EpochPlan plan, int num_workers, int64_t capacity)
      : plan_(std::move(plan)),
        total_(static_cast<int64_t>(plan_.batches.size())),
        capacity_(capacity) {
    // No more workers than batches; a thread the system refuses ends in a
    // loom::Error after the started ones are joined (a joinable std::thread
    // destroyed during unwinding would call std::terminate).
    const int64_t n = std::min<int64_t>(num_workers, total_);
    try {
      for (int64_t w = 0; w < n; ++w) workers_.emplace_back([this] { work(); });
    } catch (const std::system_error& e) {
      stop();
      fail("[DataLoader] cannot start worker thread ", workers_.size() + 1, " of ", n, ": ",
           e.what(), " (lower num_workers)");
    }
  }
  ~WorkerStream() override { stop(); }

  std::optional<Batch> next() override {
    if (done_ || consumed_ >= total_) return std::nullopt;
    Result r;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_cv_.wait(lock, [&] { return ready_.count(consumed_) != 0; });
      auto it = ready_.find(consumed_);
      r = std::move(it->second);
      ready_.erase(it);
      ++consumed_;
    }
    work_cv_.notify_all();
    if (r.error) {
      done_ = true;
      stop();
      rethrow_as_error(r.error, plan_.first + consumed_ - 1);
    }
    return std::move(r.batch);
  }

 private:
  struct Result {
    std::optional<Batch> batch;
    std::exception_ptr error;
  };

  void work() {
    for (;;) {
      int64_t i = 0;
      {
        std::unique_lock<std::mutex> lock(mu_);
        work_cv_.wait(lock, [&] {
          return stopping_ || claimed_ >= total_ || claimed_ < consumed_ + capacity_;
        });
        if (stopping_ || claimed_ >= total_) return;
        i = claimed_++;
      }
      Result r;
      try {
        r.batch = plan_.make(i);
      } catch (...) {
        r.error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        ready_[i] = std::move(r);
      }
      ready_cv_.notify_all();
    }
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    work_cv_.notify_all();
    for (std::thread& t : workers_)
      if (t.joinable()) t.join();
  }

  EpochPlan plan_;
  const int64_t total_;
  const int64_t capacity_;
  std::mutex mu_;
  std::condition_variable work_cv_, ready_cv_;
  std::map<int64_t, Result> ready_;
  int64_t claimed_ = 0;   // next batch number a worker takes (under mu_)
  int64_t consumed_ = 0;  // next batch number next() returns
  bool stopping_ = false;
  bool done_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace

// ---- BatchIterator ----

BatchIterator::BatchIterator(std::shared_ptr<BatchStream> stream) : stream_(std::move(stream)) {
  ++*this;
}

BatchIterator& BatchIterator::operator++() {
  current_.reset();
  if (stream_) current_ = stream_->next();
  if (!current_) stream_.reset();  // the end: let the stream and its threads go
  return *this;
}

// ---- DataLoader ----

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset,
                       std::shared_ptr<const Collator> collator, DataLoaderOptions options,
                       std::shared_ptr<const Sampler> sampler)
    : dataset_(std::move(dataset)),
      collator_(std::move(collator)),
      sampler_(std::move(sampler)),
      options_(options) {
  LOOM_CHECK(dataset_ != nullptr, "[DataLoader] the dataset is null");
  LOOM_CHECK(collator_ != nullptr, "[DataLoader] the collator is null");
  LOOM_CHECK(options_.batch_size >= 1, "[DataLoader] batch_size must be >= 1, got ",
             options_.batch_size);
  LOOM_CHECK(options_.num_workers >= 0 && options_.num_workers <= kMaxDataLoaderWorkers,
             "[DataLoader] num_workers must be in [0, ", kMaxDataLoaderWorkers, "], got ",
             options_.num_workers);
  LOOM_CHECK(options_.prefetch_factor >= 1, "[DataLoader] prefetch_factor must be >= 1, got ",
             options_.prefetch_factor);
  LOOM_CHECK(!(sampler_ && options_.shuffle),
             "[DataLoader] shuffle must be false when a sampler is given (the sampler decides "
             "the order)");
  if (!sampler_) {
    if (options_.shuffle)
      sampler_ = std::make_shared<RandomSampler>(dataset_->size(), options_.seed);
    else
      sampler_ = std::make_shared<SequentialSampler>(dataset_->size());
  }
}

int64_t DataLoader::size() const {
  int64_t n = sampler_->size(), b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

void DataLoader::set_epoch(int64_t epoch) {
  LOOM_CHECK(epoch >= 0, "[DataLoader] epoch must be >= 0, got ", epoch);
  epoch_ = epoch;
}

std::unique_ptr<BatchStream> DataLoader::stream(int64_t epoch, int64_t skip_batches) const {
  LOOM_CHECK(epoch >= 0, "[DataLoader] epoch must be >= 0, got ", epoch);
  LOOM_CHECK(skip_batches >= 0, "[DataLoader] skip_batches must be >= 0, got ", skip_batches);
  EpochPlan plan{dataset_, collator_, epoch, std::min(skip_batches, size()), {}};
  std::vector<int64_t> order = sampler_->indices(epoch);
  const std::vector<bool> padding = sampler_->padding(epoch);  // empty: none
  LOOM_CHECK(padding.empty() || padding.size() == order.size(), "[DataLoader] the sampler gave ",
             order.size(), " indices and ", padding.size(), " padding flags for epoch ", epoch);
  const size_t b = static_cast<size_t>(options_.batch_size);
  // Skipped batches are dropped here, as index lists: nothing is fetched,
  // collated or uploaded for them.
  for (size_t start = static_cast<size_t>(plan.first) * b; start < order.size(); start += b) {
    size_t stop = std::min(order.size(), start + b);
    if (options_.drop_last && stop - start < b) break;
    plan.batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(start),
                              order.begin() + static_cast<std::ptrdiff_t>(stop));
    std::vector<bool> flags;
    if (!padding.empty())
      flags.assign(padding.begin() + static_cast<std::ptrdiff_t>(start),
                   padding.begin() + static_cast<std::ptrdiff_t>(stop));
    const bool any = std::find(flags.begin(), flags.end(), true) != flags.end();
    plan.padding.push_back(any ? std::move(flags) : std::vector<bool>{});
  }
  if (options_.num_workers == 0) return std::make_unique<SerialStream>(std::move(plan));
  int64_t capacity = int64_t{options_.num_workers} * options_.prefetch_factor;
  return std::make_unique<WorkerStream>(std::move(plan), options_.num_workers, capacity);
}

BatchIterator DataLoader::begin() const { return BatchIterator(stream(epoch_)); }

}  // namespace loom::data
