// TensorBoard event files: CRC-32C against RFC 3720's check values, TFRecord
// framing and its reader (CRC errors, a cut-short last record skipped),
// loom's Event encoding against the bytes TensorBoard's own Python writer
// produced (tests/fixtures/tensorboard/reference.tfevents, made by
// tools/make_tensorboard_fixtures.py), and EventFileWriter's files.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/error_of.h"
#include "common/tb_event_reader.h"
#include "common/temp_dir.h"
#include "io/tb_event.h"
#include "io/tfrecord.h"

namespace loom::testing {
namespace {

const std::string kReference =
    std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/tensorboard/reference.tfevents";

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(TensorBoard, Crc32cMatchesRfc3720CheckValues) {
  const std::string digits = "123456789";
  EXPECT_EQ(io::crc32c(digits.data(), digits.size()), 0xE3069283u);
  const std::vector<unsigned char> zeros(32, 0), ones(32, 0xff);
  EXPECT_EQ(io::crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);  // RFC 3720 B.4
  EXPECT_EQ(io::crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  std::vector<unsigned char> up(32);
  for (int i = 0; i < 32; ++i) up[i] = static_cast<unsigned char>(i);
  EXPECT_EQ(io::crc32c(up.data(), up.size()), 0x46DD794Eu);
  // Continuing a CRC over two pieces gives the CRC of the whole.
  EXPECT_EQ(io::crc32c(digits.data() + 4, 5, io::crc32c(digits.data(), 4)), 0xE3069283u);
}

TEST(TensorBoard, EncoderMatchesTensorBoardsWriterByteForByte) {
  std::string mine = io::tfrecord_frame(io::encode_file_version_event(1700000000.25));
  mine += io::tfrecord_frame(io::encode_scalar_event(1700000001.5, 10, {{"train/loss", 2.5f}}));
  mine += io::tfrecord_frame(
      io::encode_scalar_event(1700000001.5, 10, {{"train/learning_rate", 5e-05f}}));
  mine += io::tfrecord_frame(io::encode_scalar_event(1700000002.25, 0, {{"eval/loss", 0.0f}}));
  mine += io::tfrecord_frame(
      io::encode_scalar_event(1700000003.0, 123456789012, {{"lazy/CompileTime", -1.25f}}));
  mine += io::tfrecord_frame(
      io::encode_text_event(1700000004.0, 3, "args", R"({"learning_rate": 5e-05})"));
  const std::string reference = read_bytes(kReference);
  ASSERT_FALSE(reference.empty()) << kReference;
  ASSERT_EQ(mine.size(), reference.size());
  for (size_t i = 0; i < mine.size(); ++i)
    ASSERT_EQ(static_cast<int>(static_cast<unsigned char>(mine[i])),
              static_cast<int>(static_cast<unsigned char>(reference[i])))
        << "first difference at byte " << i;
}

TEST(TensorBoard, ReaderDecodesTensorBoardsFile) {
  std::vector<TbEvent> events = tb_read_events(kReference);
  ASSERT_EQ(events.size(), 6u);
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  EXPECT_EQ(events[0].wall_time, 1700000000.25);
  EXPECT_EQ(events[1].step, 10);
  ASSERT_EQ(events[1].values.size(), 1u);
  EXPECT_EQ(events[1].values[0].tag, "train/loss");
  EXPECT_EQ(events[1].values[0].simple_value, 2.5f);
  EXPECT_EQ(events[2].values[0].simple_value, 5e-05f);
  EXPECT_EQ(events[3].step, 0);
  EXPECT_TRUE(events[3].values[0].has_simple_value);
  EXPECT_EQ(events[4].step, 123456789012);
  EXPECT_EQ(events[4].values[0].simple_value, -1.25f);
  EXPECT_EQ(events[5].values[0].tag, "args/text_summary");
  EXPECT_EQ(events[5].values[0].plugin_name, "text");
  EXPECT_EQ(events[5].values[0].text, R"({"learning_rate": 5e-05})");
}

TEST(TensorBoard, TruncatedLastRecordIsSkipped) {
  const std::string bytes = read_bytes(kReference);
  const io::TFRecords whole = io::read_tfrecords(bytes);
  ASSERT_EQ(whole.records.size(), 6u);
  EXPECT_FALSE(whole.truncated_tail);
  // Cut inside the last record at every length: the five before it remain.
  const size_t last = bytes.size() - (16 + whole.records.back().size());
  for (size_t cut = last + 1; cut < bytes.size(); ++cut) {
    io::TFRecords r = io::read_tfrecords(std::string_view(bytes).substr(0, cut));
    EXPECT_EQ(r.records.size(), 5u) << "cut at " << cut;
    EXPECT_TRUE(r.truncated_tail) << "cut at " << cut;
  }
}

TEST(TensorBoard, CorruptedRecordNamesFileRecordAndCrc) {
  std::string bytes = read_bytes(kReference);
  std::string data_flip = bytes;
  data_flip[16 + 20] ^= 0x01;  // inside record 0's data (24 bytes from 12)
  EXPECT_NE(error_of([&] {
              io::read_tfrecords(data_flip, "f.tfevents");
            }).find("[tfrecord] f.tfevents: record 0 at byte 0: data CRC"),
            std::string::npos);
  std::string length_flip = bytes;
  length_flip[40 + 1] ^= 0x01;  // record 1's length (record 0 is 16 + 24 bytes)
  EXPECT_NE(error_of([&] {
              io::read_tfrecords(length_flip, "f.tfevents");
            }).find("record 1 at byte 40: length CRC"),
            std::string::npos);
}

TEST(TensorBoard, WriterFileHoldsVersionThenFlushedScalars) {
  TempDir dir;
  const std::string logdir = dir.sub("runs/a");
  std::string path;
  {
    io::EventFileWriter w(logdir);
    path = w.path();
    EXPECT_EQ(path.rfind(logdir + "/events.out.tfevents.", 0), 0u) << path;
    // The file_version event is on disk at once.
    EXPECT_EQ(tb_read_events(path).size(), 1u);
    w.add_scalars({{"train/loss", 3.25f}, {"train/grad_norm", NAN}}, 7, 100.5);
    EXPECT_EQ(tb_read_events(path).size(), 1u);  // queued, not yet written
    w.flush();
    std::vector<TbEvent> e = tb_read_events(path);
    ASSERT_EQ(e.size(), 3u);
    EXPECT_EQ(e[1].step, 7);
    EXPECT_EQ(e[1].wall_time, 100.5);
    EXPECT_EQ(e[1].values[0].tag, "train/loss");
    EXPECT_EQ(e[1].values[0].simple_value, 3.25f);
    EXPECT_EQ(e[2].values[0].tag, "train/grad_norm");
    EXPECT_TRUE(std::isnan(e[2].values[0].simple_value));
    w.add_scalars({{"eval/loss", 1.0f}}, 8);
  }  // the destructor flushes
  std::vector<TbEvent> e = tb_read_events(path);
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[3].values[0].tag, "eval/loss");
  EXPECT_GT(e[3].wall_time, 1.6e9);  // stamped now
}

// A write that fails part way (here: the file-size limit, RLIMIT_FSIZE, as a
// full disk would) is cut back to the last whole record: loom never leaves a
// truncated record, and the writer goes on after the error.
TEST(TensorBoard, FailedWriteLeavesOnlyWholeRecords) {
  TempDir dir;
  io::EventFileWriter w(dir.sub("runs"));
  w.add_scalars({{"train/loss", 1.0f}}, 1);
  w.flush();
  const auto size = std::filesystem::file_size(w.path());
  struct rlimit old_limit {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  if (old_limit.rlim_max != RLIM_INFINITY && old_limit.rlim_max < size + 10)
    GTEST_SKIP() << "RLIMIT_FSIZE too low to test";
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit limit = old_limit;
  limit.rlim_cur = size + 10;  // room for part of the next record only
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  w.add_scalars(std::vector<std::pair<std::string, float>>(20, {"train/loss", 2.0f}), 2);
  const std::string err = error_of([&] { w.flush(); });
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(err.find("[tensorboard] " + w.path() + ": write failed"), std::string::npos) << err;
  EXPECT_EQ(std::filesystem::file_size(w.path()), size);
  io::TFRecords r = io::read_tfrecord_file(w.path());
  EXPECT_EQ(r.records.size(), 2u);
  EXPECT_FALSE(r.truncated_tail);
  w.add_scalars({{"train/loss", 3.0f}}, 3);
  w.flush();
  std::vector<TbEvent> e = tb_read_events(w.path());
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[2].step, 3);
}

// The number of open file descriptors of this process (/proc/self/fd).
int tb_open_fd_count() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// A writer whose first record (the file version) cannot be written throws and
// closes the file it opened: its destructor never runs.
TEST(TensorBoard, FailedFirstWriteClosesTheFile) {
  TempDir dir;
  struct rlimit old_limit {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit limit = old_limit;
  limit.rlim_cur = 0;  // no byte may be written
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  const int before = tb_open_fd_count();
  const std::string err = error_of([&] { io::EventFileWriter w(dir.sub("runs")); });
  const int after = tb_open_fd_count();
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(err.find("write failed"), std::string::npos) << err;
  EXPECT_EQ(after, before);
}

TEST(TensorBoard, WriterNamesAnUncreatableDirectory) {
  TempDir dir;
  std::ofstream(dir.sub("file")) << "x";
  EXPECT_NE(error_of([&] {
              io::EventFileWriter w(dir.sub("file/runs"));
            }).find("[tensorboard] " + dir.sub("file/runs") + ": cannot create"),
            std::string::npos);
}

}  // namespace
}  // namespace loom::testing
