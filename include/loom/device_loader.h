// DeviceLoader: PyTorch/XLA's ParallelLoader / MpDeviceLoader. Wraps a
// DataLoader and a Device; a background thread takes the next batches from the
// DataLoader and uploads them to the device (Batch::to) into a bounded queue,
// so input preparation and host-to-device copies overlap the training step.
//
//   loom::data::DeviceLoader train(loader, loom::Device("lazy"), {.prefetch = 2});
//   for (const loom::data::Batch& b : train) {   // b's tensors are on the device
//     Tensor loss = model.loss(b);  loss.backward();  opt.step();
//   }                                            // mark_step() runs in next()
//
// On a lazy device every next() after the first calls loom::lazy::mark_step()
// before returning the batch (as MpDeviceLoader's per-device loader does), so
// the step traced in the loop body is cut, compiled (or fetched from the
// cache) and launched; reaching the end of the epoch marks the last step too.
// With mark_step on, read a step's values (loss.item()) after the next
// next(), or the read syncs early and compiles an extra graph.
//
// A failure in the DataLoader (dataset, collator, workers) or in the upload is
// rethrown by next() as loom::Error with the original message, and the epoch
// ends. Destroying the iterator (break, exception) stops the background thread
// and joins it once the batch it is preparing is done.
#pragma once

#include <memory>

#include "loom/dataloader.h"
#include "loom/device.h"

namespace loom::data {

/// DeviceLoader settings.
struct DeviceLoaderOptions {
  /// Batches uploaded ahead of the consumer (ParallelLoader's
  /// device_prefetch_size); >= 1.
  int64_t prefetch = 2;
  /// Call lazy::mark_step() in next() (lazy devices only).
  bool mark_step = true;
};

class DeviceLoader {
 public:
  /// Throws loom::Error for prefetch < 1.
  DeviceLoader(DataLoader loader, Device device, DeviceLoaderOptions options = {});

  /// Batches per epoch (the DataLoader's).
  int64_t size() const { return loader_.size(); }
  /// Epoch used by begin() (forwarded to the DataLoader's stream).
  void set_epoch(int64_t epoch) { loader_.set_epoch(epoch); }
  int64_t epoch() const { return loader_.epoch(); }
  /// Starts the background thread for epoch `epoch` from batch number
  /// `skip_batches` (see DataLoader::stream: skipped batches are neither
  /// fetched nor uploaded); batches come on device().
  std::unique_ptr<BatchStream> stream(int64_t epoch, int64_t skip_batches = 0) const;
  BatchIterator begin() const;
  BatchIterator end() const { return {}; }

  const Device& device() const { return device_; }
  const DataLoader& loader() const { return loader_; }

 private:
  DataLoader loader_;
  Device device_;
  DeviceLoaderOptions options_;
};

}  // namespace loom::data
