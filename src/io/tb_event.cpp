// Event/Summary protobuf encoding and the event file writer (formats and
// sources in tb_event.h). Assumes POSIX (open/write/ftruncate).
#include "io/tb_event.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/host_name.h"
#include "io/tfrecord.h"
#include "loom/error.h"

namespace loom::io {
namespace {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };
constexpr int64_t kDtString = 7;  // tensorflow/core/framework/types.proto DT_STRING

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
void put_key(std::string& out, uint32_t field, WireType type) {
  put_varint(out, (uint64_t{field} << 3) | type);
}
void put_bytes(std::string& out, uint32_t field, const std::string& bytes) {
  put_key(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out += bytes;
}
template <typename T>
void put_fixed(std::string& out, uint32_t field, T v) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8);
  put_key(out, field, sizeof(T) == 8 ? kFixed64 : kFixed32);
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  out.append(buf, sizeof(T));
}

// Event{wall_time, step, <body>}: proto3 leaves zero scalars out.
std::string event_with(double wall_time, int64_t step, uint32_t body_field,
                       const std::string& body) {
  std::string e;
  if (wall_time != 0) put_fixed(e, 1, wall_time);
  if (step != 0) {
    put_key(e, 2, kVarint);
    put_varint(e, static_cast<uint64_t>(step));  // negative int64: 10-byte two's complement
  }
  put_bytes(e, body_field, body);
  return e;
}

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string encode_file_version_event(double wall_time) {
  return event_with(wall_time, 0, 3, "brain.Event:2");
}

std::string encode_scalar_event(double wall_time, int64_t step,
                                const std::vector<std::pair<std::string, float>>& scalars) {
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    std::string v;
    put_bytes(v, 1, tag);
    put_fixed(v, 2, value);  // in a oneof: written even when 0
    put_bytes(summary, 1, v);
  }
  return event_with(wall_time, step, 5, summary);
}

std::string encode_text_event(double wall_time, int64_t step, const std::string& tag,
                              const std::string& text) {
  std::string plugin_data, metadata, dim, shape, tensor, value, summary;
  put_bytes(plugin_data, 1, "text");
  put_bytes(metadata, 1, plugin_data);
  put_key(dim, 1, kVarint);
  put_varint(dim, 1);
  put_bytes(shape, 2, dim);
  put_key(tensor, 1, kVarint);
  put_varint(tensor, kDtString);
  put_bytes(tensor, 2, shape);
  put_bytes(tensor, 8, text);
  put_bytes(value, 1, tag + "/text_summary");
  put_bytes(value, 8, tensor);
  put_bytes(value, 9, metadata);
  put_bytes(summary, 1, value);
  return event_with(wall_time, step, 5, summary);
}

EventFileWriter::EventFileWriter(const std::string& logdir) {
  static std::atomic<int> next_uid{0};
  std::error_code ec;
  std::filesystem::create_directories(logdir, ec);
  LOOM_CHECK(!ec, "[tensorboard] ", logdir, ": cannot create the log directory: ", ec.message());
  const double now = now_seconds();
  char name[64];
  std::snprintf(name, sizeof name, "events.out.tfevents.%010lld.", static_cast<long long>(now));
  path_ = (std::filesystem::path(logdir) / (name + host_name() + "." + std::to_string(::getpid()) +
                                            "." + std::to_string(next_uid++)))
              .string();
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  LOOM_CHECK(fd_ >= 0, "[tensorboard] ", path_,
             ": cannot create the event file: ", std::strerror(errno));
  queue(encode_file_version_event(now));
  try {
    flush();
  } catch (...) {
    ::close(fd_);  // the destructor does not run for a constructor that throws
    fd_ = -1;
    throw;
  }
}

EventFileWriter::~EventFileWriter() {
  try {
    flush();
  } catch (const Error&) {
  }
  if (fd_ >= 0) ::close(fd_);
}

void EventFileWriter::queue(std::string event) { pending_ += tfrecord_frame(event); }

void EventFileWriter::add_scalars(const std::vector<std::pair<std::string, float>>& scalars,
                                  int64_t step, double wall_time) {
  if (scalars.empty()) return;
  // One event per scalar, as SummaryWriter.add_scalar writes them.
  const double t = wall_time < 0 ? now_seconds() : wall_time;
  for (const auto& s : scalars) queue(encode_scalar_event(t, step, {s}));
}

void EventFileWriter::add_text(const std::string& tag, const std::string& text, int64_t step,
                               double wall_time) {
  queue(encode_text_event(wall_time < 0 ? now_seconds() : wall_time, step, tag, text));
}

void EventFileWriter::flush() {
  if (pending_.empty() || fd_ < 0) return;
  size_t done = 0;
  while (done < pending_.size()) {
    const ssize_t n = ::write(fd_, pending_.data() + done, pending_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? std::strerror(errno) : "nothing written";
      // Cut back to the last whole record so readers see complete records only.
      if (::ftruncate(fd_, static_cast<off_t>(size_)) == 0)
        ::lseek(fd_, static_cast<off_t>(size_), SEEK_SET);
      pending_.clear();
      fail("[tensorboard] ", path_, ": write failed: ", why);
    }
    done += static_cast<size_t>(n);
  }
  size_ += pending_.size();
  pending_.clear();
}

}  // namespace loom::io
