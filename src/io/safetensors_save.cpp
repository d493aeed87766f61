// loom::safetensors::save: lays tensors out as the reference writer does
// (Rust safetensors::tensor::prepare: sort by dtype descending then name,
// pack without gaps, serde_json compact header with "__metadata__" first,
// pad with spaces to a multiple of 8) and writes the file atomically
// (temporary + fsync + rename + directory fsync). Assumes POSIX.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <utility>

#include "core/json_string.h"
#include "io/safetensors_format.h"
#include "loom/error.h"
#include "loom/safetensors.h"

namespace loom::safetensors {

namespace {

// One tensor with its place in the data buffer.
struct Planned {
  const TensorRef* ref;
  int order;  // detail::dtype_order(ref->dtype)
  size_t begin;
  size_t nbytes;
};

void check_utf8(std::string_view text, const std::string& prefix, const char* what) {
  if (auto bad = detail::find_invalid_utf8(text)) {
    fail(prefix, what, " '", text, "' is not valid UTF-8 (byte ", *bad, ")");
  }
}

// Validates the inputs and assigns offsets in the reference's order.
std::vector<Planned> plan(const std::vector<TensorRef>& tensors, const std::string& prefix) {
  std::set<std::string_view> names;
  std::vector<Planned> out;
  out.reserve(tensors.size());
  for (const TensorRef& t : tensors) {
    const std::string who = prefix + "tensor '" + t.name + "'";
    LOOM_CHECK(t.name != "__metadata__", who, ": the name is reserved for the metadata");
    LOOM_CHECK(names.insert(t.name).second, prefix, "duplicate tensor name '", t.name, "'");
    check_utf8(t.name, prefix, "tensor name");
    size_t count = 1;
    bool overflow = false;
    for (int64_t d : t.shape) {
      LOOM_CHECK(d >= 0, who, " has negative dimension in shape ", to_string(t.shape));
      auto ud = static_cast<size_t>(d);
      if (ud != 0 && count > std::numeric_limits<size_t>::max() / ud) overflow = true;
      if (!overflow) count *= ud;
    }
    const size_t size = dtype_size(t.dtype);
    LOOM_CHECK(!overflow && count <= std::numeric_limits<size_t>::max() / size, who, " shape ",
               to_string(t.shape), " ", dtype_name(t.dtype), " overflows the byte count");
    const size_t nbytes = count * size;
    LOOM_CHECK(t.data != nullptr || nbytes == 0, who, " has null data for ", nbytes, " bytes");
    out.push_back({&t, detail::dtype_order(t.dtype), 0, nbytes});
  }
  std::sort(out.begin(), out.end(), [](const Planned& a, const Planned& b) {
    if (a.order != b.order) return a.order > b.order;
    return a.ref->name < b.ref->name;  // bytewise, as Rust's String order
  });
  size_t offset = 0;
  for (Planned& p : out) {
    LOOM_CHECK(p.nbytes <= std::numeric_limits<size_t>::max() - offset, prefix,
               "total data size overflows");
    p.begin = offset;
    offset += p.nbytes;
  }
  return out;
}

// The JSON header, padded with spaces to a multiple of 8 bytes.
std::string build_header(const std::vector<Planned>& planned,
                         const std::map<std::string, std::string>& metadata,
                         const std::string& prefix) {
  std::string json = "{";
  if (!metadata.empty()) {
    json += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [key, value] : metadata) {
      check_utf8(key, prefix, "metadata key");
      check_utf8(value, prefix, "metadata value");
      if (!first) json += ',';
      first = false;
      append_json_string(json, key);
      json += ':';
      append_json_string(json, value);
    }
    json += '}';
  }
  for (const Planned& p : planned) {
    if (json.size() > 1) json += ',';
    append_json_string(json, p.ref->name);
    json += ":{\"dtype\":\"";
    json += dtype_code(p.ref->dtype);
    json += "\",\"shape\":[";
    for (size_t i = 0; i < p.ref->shape.size(); ++i) {
      if (i) json += ',';
      json += std::to_string(p.ref->shape[i]);
    }
    json += "],\"data_offsets\":[" + std::to_string(p.begin) + "," +
            std::to_string(p.begin + p.nbytes) + "]}";
  }
  json += '}';
  json.append((8 - json.size() % 8) % 8, ' ');
  LOOM_CHECK(json.size() <= kMaxHeaderSize, prefix, "header would be ", json.size(),
             " bytes, over the limit of ", kMaxHeaderSize);
  return json;
}

// A temporary file next to `path` that becomes `path` on commit() and is
// removed if destroyed before.
class AtomicFile {
 public:
  AtomicFile(const std::string& path, const std::string& prefix)
      : path_(path), tmp_(path + ".tmp." + std::to_string(::getpid())), prefix_(prefix) {
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd_ < 0) fail(prefix_, "cannot create ", tmp_, ": ", std::strerror(errno));
  }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(tmp_.c_str());
  }

  void write(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      ssize_t w = ::write(fd_, p, std::min<size_t>(n, size_t{1} << 30));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) fail(prefix_, "write to ", tmp_, " failed: ", std::strerror(w < 0 ? errno : EIO));
      p += w;
      n -= static_cast<size_t>(w);
    }
  }

  void commit() {
    if (::fsync(fd_) != 0) fail(prefix_, "fsync of ", tmp_, " failed: ", std::strerror(errno));
    int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) fail(prefix_, "close of ", tmp_, " failed: ", std::strerror(errno));
    if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
      fail(prefix_, "cannot rename ", tmp_, " to ", path_, ": ", std::strerror(errno));
    }
    committed_ = true;
    sync_directory();
  }

 private:
  // Makes the rename durable. Filesystems that cannot fsync a directory
  // (EINVAL) are accepted: the file itself is already complete.
  void sync_directory() {
    std::filesystem::path parent = std::filesystem::path(path_).parent_path();
    const std::string dir = parent.empty() ? std::string(".") : parent.string();
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) fail(prefix_, "cannot open directory ", dir, ": ", std::strerror(errno));
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0 && err != EINVAL) {
      fail(prefix_, "fsync of directory ", dir, " failed: ", std::strerror(err));
    }
  }

  std::string path_, tmp_, prefix_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace

void save(const std::string& path, const std::vector<TensorRef>& tensors,
          const std::map<std::string, std::string>& metadata) {
  const std::string prefix = "[safetensors] " + path + ": ";
  std::vector<Planned> planned = plan(tensors, prefix);
  std::string header = build_header(planned, metadata, prefix);
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(header.size() >> (8 * i));

  AtomicFile file(path, prefix);
  file.write(length, sizeof(length));
  file.write(header.data(), header.size());
  for (const Planned& p : planned) file.write(p.ref->data, p.nbytes);
  file.commit();
}

}  // namespace loom::safetensors
