// tokenize_to_cache (loom/token_cache.h): finds or builds the token file of a
// text file. The cache file's name comes from the data file's absolute path,
// the tokenizer, the flags and the line range, so a changed data file
// replaces its own stale cache instead of adding one; its header key adds the
// data file's contents (every byte, hashed in one streaming read: a cache
// never answers for data it does not match, even when an edit kept the
// file's size and mtime). Building streams the lines through
// io::TextLineStream in batches, appends the ids to
// "<name>.tmp.<host>.<pid>.<n>" while hashing them (the body checksum),
// writes the header last, fsyncs and renames. Temporary files of processes of
// this host that no longer run (a build killed mid-way) are removed.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/host_name.h"
#include "core/parse_number.h"
#include "core/settings.h"
#include "data/token_file_format.h"
#include "io/text_line_stream.h"
#include "loom/error.h"
#include "loom/token_cache.h"

namespace loom::data {
namespace fs = std::filesystem;

namespace {

Hash128 tc_hash_text(Hash128 h, const std::string& s) { return hash_string(h, s); }

// Hash of bytes [offset, offset + n) of `path`.
Hash128 tc_hash_file_range(const std::string& path, int64_t offset, size_t n) {
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(in.good(), "[data] ", path, ": cannot open the file");
  in.seekg(offset);
  std::string buf(n, '\0');
  in.read(buf.data(), static_cast<std::streamsize>(n));
  buf.resize(static_cast<size_t>(in.gcount()));
  return hash_string(Hash128{}, buf);
}

// What the cache file's name is made of: everything but the data's identity.
Hash128 tc_name_hash(const std::string& abs_path, const TokenFileSource& s,
                     const TokenCacheKey& k) {
  Hash128 h{0x746f6b656e6e616dULL, 1};
  h = tc_hash_text(h, abs_path);
  h = tc_hash_text(h, k.tokenizer);
  h = tc_hash_text(h, k.flags);
  h = hash_combine(h, static_cast<uint64_t>(s.keep_linebreaks));
  h = hash_combine(h, static_cast<uint64_t>(s.skip_percent));
  return hash_combine(h, static_cast<uint64_t>(s.head_only));
}

// The data file's size and mtime: what a change during a build would alter.
struct DataStamp {
  int64_t size = 0, mtime_sec = 0, mtime_nsec = 0;
  bool operator==(const DataStamp&) const = default;
};
DataStamp tc_stamp(const std::string& path) {
  struct stat st {};
  LOOM_CHECK(::stat(path.c_str(), &st) == 0, "[data] ", path, ": ", std::strerror(errno));
  return {static_cast<int64_t>(st.st_size), static_cast<int64_t>(st.st_mtim.tv_sec),
          static_cast<int64_t>(st.st_mtim.tv_nsec)};
}

// The full key: the name's hash and every byte of the data file (one
// sequential read; far cheaper than tokenizing it).
Hash128 tc_content_key(const std::string& path, Hash128 name) {
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(in.good(), "[data] ", path, ": cannot open the file");
  StreamHasher h(name);
  std::vector<char> buf(size_t{4} << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h.update(buf.data(), static_cast<size_t>(in.gcount()));
  }
  LOOM_CHECK(in.eof(), "[data] ", path, ": read error");
  return h.finish();
}

// Lines [first, last) of the source (0-based), from its held-back percentage.
std::pair<int64_t, int64_t> tc_line_range(const TokenFileSource& s) {
  LOOM_CHECK(s.skip_percent >= 0 && s.skip_percent <= 100, "[data] ", s.path,
             ": the held-back percentage must be in [0, 100], got ", s.skip_percent);
  if (s.skip_percent == 0)
    return s.head_only ? std::pair{int64_t{0}, int64_t{0}} : std::pair{int64_t{0}, INT64_MAX};
  const int64_t n = io::count_text_lines(s.path);
  // round(n * p / 100), as datasets' "train[:p%]" (and job_data's split_rows).
  const auto held =
      static_cast<int64_t>(std::llround(static_cast<double>(n) * s.skip_percent / 100.0));
  return s.head_only ? std::pair{int64_t{0}, held} : std::pair{held, INT64_MAX};
}

// Encodes one batch; an error is rethrown naming the file and the line at fault
// (found by encoding the batch's lines one at a time).
std::vector<std::vector<int32_t>> tc_encode_batch_at(const EncodeLinesFn& encode,
                                                     const std::vector<std::string>& lines,
                                                     const std::string& path, int64_t first_line) {
  try {
    return encode(lines);
  } catch (const Error& batch_error) {
    for (size_t i = 0; i < lines.size(); ++i) {
      try {
        encode({lines[i]});
      } catch (const Error& e) {
        fail("[data] ", path, ":", first_line + static_cast<int64_t>(i), ": ", e.what());
      }
    }
    fail("[data] ", path, ":", first_line, "-", first_line + static_cast<int64_t>(lines.size()) - 1,
         ": ", batch_error.what());
  }
}

// The temporary file being written: removed unless committed.
class TokenFileWriter {
 public:
  TokenFileWriter(std::string final_path) : final_(std::move(final_path)) {
    static std::atomic<int> counter{0};
    tmp_ = final_ + ".tmp." + host_name() + "." + std::to_string(::getpid()) + "." +
           std::to_string(counter++);
    file_ = std::fopen(tmp_.c_str(), "w+b");  // read back for the sample hash
    LOOM_CHECK(file_ != nullptr, "[token cache] cannot write ", tmp_, ": ", std::strerror(errno),
               " (set LOOM_DATASETS_CACHE to a writable folder)");
    token_format::Header zero{};
    write(&zero, sizeof zero);
  }
  ~TokenFileWriter() {
    if (file_) std::fclose(file_);
    if (!committed_) std::remove(tmp_.c_str());
  }
  void write(const void* p, size_t n) {
    if (n == 0) return;  // an empty line's ids: data() may be null, which fwrite must not get
    LOOM_CHECK(std::fwrite(p, 1, n, file_) == n, "[token cache] ", tmp_,
               ": write failed: ", std::strerror(errno), " (disk full?)");
  }
  void append(const std::vector<int32_t>& ids) {
    write(ids.data(), ids.size() * 4);
    body_.update(ids.data(), ids.size() * 4);
    tokens_ += static_cast<int64_t>(ids.size());
  }
  int64_t tokens() const { return tokens_; }
  // Writes the header, fsyncs and renames the file into place.
  void commit(Hash128 key, int64_t lines) {
    LOOM_CHECK(std::fflush(file_) == 0, "[token cache] ", tmp_, ": ", std::strerror(errno));
    token_format::Header h{};
    std::memcpy(h.magic, token_format::kMagic, sizeof h.magic);
    h.version = token_format::kVersion;
    h.header_bytes = token_format::kHeaderBytes;
    h.key_lo = key.lo;
    h.key_hi = key.hi;
    h.tokens = static_cast<uint64_t>(tokens_);
    h.lines = static_cast<uint64_t>(lines);
    const Hash128 body = body_.finish();
    h.body_hash_lo = body.lo;
    h.body_hash_hi = body.hi;
    Hash128 hh = token_format::header_hash(h);
    h.header_hash_lo = hh.lo;
    h.header_hash_hi = hh.hi;
    LOOM_CHECK(std::fseek(file_, 0, SEEK_SET) == 0, "[token cache] ", tmp_, ": seek failed");
    write(&h, sizeof h);
    LOOM_CHECK(std::fflush(file_) == 0 && ::fsync(fileno(file_)) == 0, "[token cache] ", tmp_, ": ",
               std::strerror(errno));
    std::fclose(file_);
    file_ = nullptr;
    LOOM_CHECK(std::rename(tmp_.c_str(), final_.c_str()) == 0, "[token cache] cannot rename ", tmp_,
               " to ", final_, ": ", std::strerror(errno));
    committed_ = true;
  }

 private:
  std::string final_, tmp_;
  std::FILE* file_ = nullptr;
  int64_t tokens_ = 0;
  StreamHasher body_{token_format::kBodyHashSeed};
  bool committed_ = false;
};

// Removes "<name>.tokens.tmp.<host>.<pid>.<n>" files in `dir` that a process
// of this host which no longer runs left behind (killed mid-build). Files of
// other hosts (a shared folder) and of live processes are left alone.
void tc_remove_dead_temp_files(const fs::path& dir) {
  const std::string mark = ".tokens.tmp." + host_name() + ".";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    const size_t at = n.find(mark);
    if (at == std::string::npos) continue;
    const std::string rest = n.substr(at + mark.size());  // "<pid>.<n>"
    const auto pid = parse_decimal_int(rest.substr(0, rest.find('.')));
    if (!pid || *pid <= 0 || *pid > INT32_MAX) continue;
    if (::kill(static_cast<pid_t>(*pid), 0) == 0 || errno != ESRCH) continue;
    if (fs::remove(e.path(), ec))
      std::fprintf(stderr, "[token cache] removed %s, left by a build that did not finish\n",
                   e.path().string().c_str());
  }
}

// One streaming pass: lines [first, last) of the source, batch by batch.
void tc_build_token_file(const TokenFileSource& s, const EncodeLinesFn& encode, size_t batch_bytes,
                         TokenFileWriter& out, TokenCacheReport& r) {
  auto [first, last] = tc_line_range(s);
  io::TextLineStream in(s.path, s.keep_linebreaks);
  std::vector<std::string> batch;
  size_t bytes = 0;
  int64_t batch_first = 0;
  auto flush = [&] {
    for (const auto& ids : tc_encode_batch_at(encode, batch, s.path, batch_first)) out.append(ids);
    r.lines += static_cast<int64_t>(batch.size());
    batch.clear();
    bytes = 0;
  };
  std::string line;
  while (in.line_number() < last) {
    const bool wanted = in.line_number() >= first;
    if (!in.next(wanted ? &line : nullptr)) break;
    if (!wanted) continue;
    if (batch.empty()) batch_first = in.line_number();
    bytes += line.size();
    r.text_bytes += static_cast<int64_t>(line.size());
    batch.push_back(std::move(line));
    if (bytes >= batch_bytes) flush();
  }
  if (!batch.empty()) flush();
  r.tokens = out.tokens();
}

}  // namespace

std::string default_token_cache_dir() {
  if (const std::string& d = settings::text(Setting::datasets_cache); !d.empty()) return d;
  if (const char* x = settings::environment("XDG_CACHE_HOME"); x && *x)
    return (fs::path(x) / "loom" / "datasets").string();
  const char* home = settings::environment("HOME");
  LOOM_CHECK(home && *home,
             "[token cache] no cache folder: set LOOM_DATASETS_CACHE (or XDG_CACHE_HOME or HOME)");
  return (fs::path(home) / ".cache" / "loom" / "datasets").string();
}

std::string tokenizer_fingerprint(const std::string& dir) {
  Hash128 h{0x746f6b66696e6752ULL, 1};
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                           "added_tokens.json", "vocab.json", "merges.txt", "vocab.txt"}) {
    fs::path p = fs::path(dir) / name;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) continue;
    auto size = static_cast<size_t>(fs::file_size(p, ec));
    h = hash_combine(tc_hash_text(h, name), tc_hash_file_range(p.string(), 0, size));
  }
  return h.hex();
}

std::shared_ptr<const TokenFile> tokenize_to_cache(const TokenFileSource& source,
                                                   const EncodeLinesFn& encode,
                                                   const TokenCacheKey& key,
                                                   const TokenCacheOptions& options,
                                                   TokenCacheReport* report) {
  LOOM_CHECK(encode != nullptr, "[data] ", source.path, ": the encode function is empty");
  const auto start = std::chrono::steady_clock::now();
  TokenCacheReport r;
  std::error_code ec;
  const std::string abs = fs::absolute(source.path, ec).lexically_normal().string();
  const Hash128 name = tc_name_hash(abs, source, key);
  const DataStamp stamp = tc_stamp(source.path);
  const Hash128 content = tc_content_key(source.path, name);
  const fs::path dir = options.cache_dir.empty() ? default_token_cache_dir() : options.cache_dir;
  fs::create_directories(dir, ec);
  LOOM_CHECK(fs::is_directory(dir), "[token cache] cannot create the cache folder ", dir.string(),
             ": ", ec.message(), " (set LOOM_DATASETS_CACHE to a writable folder)");
  r.cache_path =
      (dir / (fs::path(source.path).filename().string() + "-" + name.hex() + ".tokens")).string();
  std::shared_ptr<const TokenFile> file;
  if (options.overwrite) {
    r.rebuilt = "overwrite asked";
  } else if (!fs::exists(r.cache_path)) {
    r.rebuilt = "missing";
  } else {
    try {
      file = TokenFile::open(r.cache_path, content.hex());
      r.hit = true;
      r.lines = file->lines();
      r.tokens = file->size();
    } catch (const Error& e) {
      std::string why = e.what();
      r.rebuilt = why.substr(why.find(": ", why.find(r.cache_path)) + 2);
      std::fprintf(stderr, "[token cache] warning: %s: %s; rebuilding it\n", r.cache_path.c_str(),
                   r.rebuilt.c_str());
    }
  }
  if (!file) {
    tc_remove_dead_temp_files(dir);
    TokenFileWriter out(r.cache_path);
    tc_build_token_file(source, encode, std::max<size_t>(options.batch_bytes, 1), out, r);
    // The key hashed the file before this pass read it: a file changed in
    // between would give a cache of other data under its key.
    LOOM_CHECK(tc_stamp(source.path) == stamp, "[token cache] ", source.path,
               " changed while it was being tokenized; run again once it is complete");
    out.commit(content, r.lines);
    file = TokenFile::open(r.cache_path, content.hex());
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (report) *report = r;
  return file;
}

}  // namespace loom::data
