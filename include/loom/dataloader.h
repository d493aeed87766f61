// DataLoader (torch.utils.data.DataLoader for a map-style dataset): groups a
// sampler's indices into batches, collates them, and with num_workers > 0
// prepares the next batches on worker threads while the caller trains.
//
//   auto ds = std::make_shared<loom::data::InMemoryDataset>(...);
//   auto collate = std::make_shared<loom::data::CausalLMCollator>(pad);
//   loom::data::DataLoader loader(ds, collate, {.batch_size = 8, .shuffle = true,
//                                               .seed = 42, .num_workers = 2});
//   for (int64_t epoch = 0; epoch < 3; ++epoch) {
//     loader.set_epoch(epoch);                 // a new, reproducible order
//     for (const loom::data::Batch& b : loader) train_step(b);
//   }
//
// Batches arrive in sampler order whatever the number of workers. Workers run
// at most num_workers * prefetch_factor batches ahead of the caller. An
// exception thrown while preparing a batch (in Dataset::get or the collator)
// is rethrown by the caller's next() as loom::Error carrying the original
// message; the epoch then ends. Leaving a loop early (break, exception) is
// safe: destroying the iterator stops the workers and joins them once their
// current batch is done.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "loom/collator.h"
#include "loom/dataset.h"
#include "loom/sampler.h"

namespace loom::data {

/// One epoch's batches, consumed in order. Not thread-safe: one consumer.
class BatchStream {
 public:
  virtual ~BatchStream() = default;
  /// The next batch, or nullopt after the last one. Rethrows a failure while
  /// preparing a batch as loom::Error; after that it returns nullopt.
  virtual std::optional<Batch> next() = 0;
};

/// Input iterator over a BatchStream, for range-based for loops. Copies share
/// the stream; the stream (and its threads) ends with the last copy.
class BatchIterator {
 public:
  BatchIterator() = default;  ///< the end iterator
  explicit BatchIterator(std::shared_ptr<BatchStream> stream);
  const Batch& operator*() const { return *current_; }
  const Batch* operator->() const { return &*current_; }
  /// Advances; rethrows a failure as loom::Error (see BatchStream::next).
  BatchIterator& operator++();
  /// Equal when both are at the end.
  bool operator==(const BatchIterator& other) const {
    return !current_.has_value() && !other.current_.has_value();
  }

 private:
  std::shared_ptr<BatchStream> stream_;
  std::optional<Batch> current_;
};

/// Most worker threads a DataLoader starts (num_workers above it is an error):
/// batch preparation is CPU work, and more threads than this only add
/// contention; thread creation itself fails in the tens of thousands.
inline constexpr int kMaxDataLoaderWorkers = 256;

/// DataLoader settings (torch's names and defaults where they exist).
struct DataLoaderOptions {
  int64_t batch_size = 1;
  bool drop_last = false;  ///< drop a last batch smaller than batch_size
  bool shuffle = false;    ///< RandomSampler(seed) when no sampler is given
  uint64_t seed = 0;
  int num_workers = 0;      ///< 0: batches made in next(), on the caller's thread; <= 256
  int prefetch_factor = 2;  ///< batches in flight per worker (num_workers > 0)
};

/// Batches of a dataset. Copies are cheap and share the dataset, collator
/// and sampler (all immutable).
class DataLoader {
 public:
  /// `sampler` null: SequentialSampler, or RandomSampler(seed) if shuffle.
  /// Throws loom::Error for a null dataset or collator, batch_size < 1,
  /// num_workers outside [0, kMaxDataLoaderWorkers], prefetch_factor < 1, or
  /// shuffle together with a sampler (as torch). A sampler index outside
  /// [0, dataset size) is a loom::Error raised by next() for the batch
  /// holding it.
  DataLoader(std::shared_ptr<const Dataset> dataset, std::shared_ptr<const Collator> collator,
             DataLoaderOptions options = {}, std::shared_ptr<const Sampler> sampler = nullptr);

  /// Batches per epoch: ceil(sampler size / batch_size), or floor with drop_last.
  int64_t size() const;
  /// Epoch used by begin() (the sampler's shuffle and the collator's draws).
  void set_epoch(int64_t epoch);
  int64_t epoch() const { return epoch_; }
  /// Starts a pass over epoch `epoch` (workers start now when num_workers > 0;
  /// never more workers than batches), beginning at batch number
  /// `skip_batches` (transformers' skip_first_batches, done on the sampler's
  /// indices: the skipped batches are never fetched with Dataset::get nor
  /// collated; the collator still sees each batch's number in the epoch, so
  /// its draws match an unskipped pass, and each batch's Sampler::padding
  /// flags in CollateContext::padding). A skip of size() or more gives an
  /// empty stream. Throws loom::Error for epoch < 0 or skip_batches < 0, when
  /// the sampler gives a padding flag list of another length than its indices,
  /// when the system cannot start the worker threads (the started ones are
  /// stopped first).
  std::unique_ptr<BatchStream> stream(int64_t epoch, int64_t skip_batches = 0) const;
  /// stream(epoch()) as an iterator, and the end iterator.
  BatchIterator begin() const;
  BatchIterator end() const { return {}; }

  const DataLoaderOptions& options() const { return options_; }
  const std::shared_ptr<const Dataset>& dataset() const { return dataset_; }

 private:
  std::shared_ptr<const Dataset> dataset_;
  std::shared_ptr<const Collator> collator_;
  std::shared_ptr<const Sampler> sampler_;
  DataLoaderOptions options_;
  int64_t epoch_ = 0;
};

}  // namespace loom::data
