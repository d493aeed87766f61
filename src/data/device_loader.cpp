// DeviceLoader (loom/device_loader.h): one background thread pulls batches
// from a DataLoader stream, uploads them with Batch::to(device) and queues at
// most `prefetch` of them; next() marks the step on a lazy device and hands
// the queued batches over in order.
// Assumes uploading (creating device-data tensors) is safe on a thread other
// than the one tracing: on the lazy device it only makes data nodes, which
// touch no shared trace state (lazy/trace.h).
#include "loom/device_loader.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "loom/error.h"
#include "loom/lazy.h"

namespace loom::data {
namespace {

class DeviceStream : public BatchStream {
 public:
  DeviceStream(std::unique_ptr<BatchStream> source, Device device, DeviceLoaderOptions options)
      : source_(std::move(source)), device_(std::move(device)), options_(options) {
    thread_ = std::thread([this] { produce(); });
  }
  ~DeviceStream() override { stop(); }

  std::optional<Batch> next() override {
    if (done_) return std::nullopt;
    // MpDeviceLoader: the step traced since the last batch is cut here.
    if (options_.mark_step && device_.is_lazy() && returned_ > 0) lazy::mark_step();
    Item item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_cv_.wait(lock, [&] { return !queue_.empty(); });
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    space_cv_.notify_all();
    if (item.error) {
      done_ = true;
      stop();
      rethrow(item.error);
    }
    if (!item.batch) {
      done_ = true;
      return std::nullopt;
    }
    ++returned_;
    return std::move(item.batch);
  }

 private:
  struct Item {
    std::optional<Batch> batch;  // nullopt with no error: the end of the epoch
    std::exception_ptr error;
  };

  void produce() {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        space_cv_.wait(lock, [&] {
          return stopping_ || static_cast<int64_t>(queue_.size()) < options_.prefetch;
        });
        if (stopping_) return;
      }
      Item item;
      try {
        item.batch = source_->next();
        if (item.batch) item.batch = item.batch->to(device_);
      } catch (...) {
        item.batch.reset();
        item.error = std::current_exception();
      }
      bool last = !item.batch;
      {
        std::lock_guard<std::mutex> lock(mu_);
        queue_.push_back(std::move(item));
      }
      ready_cv_.notify_all();
      if (last) return;
    }
  }

  [[noreturn]] static void rethrow(const std::exception_ptr& error) {
    try {
      std::rethrow_exception(error);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      fail("[DeviceLoader] preparing or uploading a batch failed: ", e.what());
    } catch (...) {
      fail("[DeviceLoader] preparing or uploading a batch failed with a non-standard exception");
    }
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    space_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  std::unique_ptr<BatchStream> source_;  // used by the background thread only
  Device device_;
  DeviceLoaderOptions options_;
  std::mutex mu_;
  std::condition_variable ready_cv_, space_cv_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  bool done_ = false;
  int64_t returned_ = 0;
  std::thread thread_;
};

}  // namespace

DeviceLoader::DeviceLoader(DataLoader loader, Device device, DeviceLoaderOptions options)
    : loader_(std::move(loader)), device_(std::move(device)), options_(options) {
  LOOM_CHECK(options_.prefetch >= 1, "[DeviceLoader] prefetch must be >= 1, got ",
             options_.prefetch);
}

std::unique_ptr<BatchStream> DeviceLoader::stream(int64_t epoch, int64_t skip_batches) const {
  return std::make_unique<DeviceStream>(loader_.stream(epoch, skip_batches), device_, options_);
}

BatchIterator DeviceLoader::begin() const { return BatchIterator(stream(loader_.epoch())); }

}  // namespace loom::data
