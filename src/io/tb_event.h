// TensorBoard event files: the few fields of the `Event` and `Summary`
// protobufs loom writes, hand-encoded in the protobuf wire format, and a
// writer of `events.out.tfevents.*` files (TFRecord framing, io/tfrecord.h).
//
// Messages and field numbers (tensorflow/core/util/event.proto,
// tensorflow/core/framework/summary.proto, tensor.proto, tensor_shape.proto;
// the same files ship in tensorboard/compat/proto):
//   Event          { double wall_time = 1; int64 step = 2;
//                    string file_version = 3; Summary summary = 5; }
//   Summary        { repeated Value value = 1; }
//   Summary.Value  { string tag = 1; float simple_value = 2;
//                    TensorProto tensor = 8; SummaryMetadata metadata = 9; }
//   SummaryMetadata{ PluginData plugin_data = 1; }   PluginData{ string plugin_name = 1; }
//   TensorProto    { DataType dtype = 1 (DT_STRING = 7); TensorShapeProto tensor_shape = 2;
//                    repeated bytes string_val = 8; }
//   TensorShapeProto { repeated Dim dim = 2; }        Dim{ int64 size = 1; }
// Wire format (protobuf's encoding guide): key = field << 3 | type; varint
// (0), 64-bit little-endian (1), length-delimited (2), 32-bit (5). As
// protobuf's own serializer does, fields are written in field-number order
// and proto3 defaults (step 0, wall_time 0) are left out, so the bytes equal
// what tensorboard's Python writer produces for the same event.
//
// The first event of a file holds file_version "brain.Event:2"; a text
// summary is tagged "<name>/text_summary" with plugin "text", as
// torch.utils.tensorboard's SummaryWriter.add_text writes it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace loom::io {

/// The Event with file_version "brain.Event:2" (a file's first record).
std::string encode_file_version_event(double wall_time);
/// One Event holding scalar summaries: (tag, value) pairs at `step`.
std::string encode_scalar_event(double wall_time, int64_t step,
                                const std::vector<std::pair<std::string, float>>& scalars);
/// One Event holding a text summary "<tag>/text_summary" (TensorBoard's Text tab).
std::string encode_text_event(double wall_time, int64_t step, const std::string& tag,
                              const std::string& text);

/// Writes one `events.out.tfevents.<seconds>.<host>.<pid>.<n>` file in a
/// log directory (the name torch.utils.tensorboard gives it). Events are
/// buffered and written by flush() as whole records with one write() call, so
/// a reader never sees a record that loom left half written: a crash loses
/// what was not flushed, never the file. Not thread-safe.
class EventFileWriter {
 public:
  /// Creates `logdir` (and parents) and the file with its file_version
  /// event, flushed. Throws loom::Error "[tensorboard] <path>: ..." when the
  /// directory or file cannot be created.
  explicit EventFileWriter(const std::string& logdir);
  ~EventFileWriter();  ///< flushes (errors ignored) and closes
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  /// Queues scalars at `step`, stamped with `wall_time` (seconds since the
  /// epoch; < 0: now). Non-finite values are written as they are (TensorBoard
  /// shows them as NaN/inf).
  void add_scalars(const std::vector<std::pair<std::string, float>>& scalars, int64_t step,
                   double wall_time = -1);
  /// Queues a text summary (see encode_text_event).
  void add_text(const std::string& tag, const std::string& text, int64_t step,
                double wall_time = -1);
  /// Appends the queued records to the file. On a failed or short write the
  /// file is cut back to its last complete record and loom::Error
  /// "[tensorboard] <path>: write failed: ..." is thrown.
  void flush();
  /// The event file's path.
  const std::string& path() const { return path_; }

 private:
  void queue(std::string event);
  std::string path_;
  std::string pending_;
  int fd_ = -1;
  uint64_t size_ = 0;  ///< bytes in the file: always a whole number of records
};

}  // namespace loom::io
