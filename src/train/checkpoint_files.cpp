// Checkpoint directories on disk (train/checkpoint_files.h): durable writes,
// commit by rename, ordering and rotation as transformers' trainer_utils
// (sort_checkpoints / rotate_checkpoints, numerical order), recovery of an
// interrupted replace, the output_dir write probe, tokenizer file copies and
// rng_state.json. Assumes POSIX (open/fsync/rename). std::filesystem calls use
// their error_code overloads; failures that matter become loom::Error.
#include "train/checkpoint_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "io/json_parse.h"
#include "loom/error.h"
#include "loom/trainer.h"

namespace loom {
namespace detail {
namespace {
std::mutex g_hook_mutex;
std::function<void(const std::string&)> g_hook;
}  // namespace
void set_checkpoint_file_hook(std::function<void(const std::string& file)> hook) {
  std::lock_guard<std::mutex> lock(g_hook_mutex);
  g_hook = std::move(hook);
}
}  // namespace detail

namespace train {
namespace fs = std::filesystem;

void checkpoint_file_written(const std::string& file) {
  std::function<void(const std::string&)> hook;
  {
    std::lock_guard<std::mutex> lock(detail::g_hook_mutex);
    hook = detail::g_hook;
  }
  if (hook) hook(file);
}

namespace {

void fsync_path(const fs::path& p, bool directory) {
  int fd = ::open(p.c_str(), directory ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  LOOM_CHECK(fd >= 0, "[checkpoint] ", p.string(), ": cannot open for fsync (",
             std::strerror(errno), ")");
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  LOOM_CHECK(rc == 0, "[checkpoint] ", p.string(), ": fsync failed (", std::strerror(err), ")");
}

// create_directories, also failing when `dir` exists but is not a directory.
std::error_code make_dirs(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!ec && !fs::is_directory(dir, ec) && !ec)
    ec = std::make_error_code(std::errc::not_a_directory);
  return ec;
}

}  // namespace

void write_text_file(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  LOOM_CHECK(fd >= 0, "[checkpoint] ", path, ": cannot create (", std::strerror(errno), ")");
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      fail("[checkpoint] ", path, ": write failed (", std::strerror(err), ")");
    }
    done += static_cast<size_t>(n);
  }
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  LOOM_CHECK(rc == 0, "[checkpoint] ", path, ": fsync failed (", std::strerror(err), ")");
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(in.good(), "[checkpoint] ", path, ": cannot open file");
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  for (const fs::directory_iterator end; !ec && it != end; it.increment(ec))
    out.push_back(it->path().filename().string());
  LOOM_CHECK(!ec, "[checkpoint] ", dir, ": cannot list directory (", ec.message(), ")");
  return out;
}

void create_dir(const std::string& dir, const std::string& who) {
  const std::error_code ec = make_dirs(dir);
  LOOM_CHECK(!ec, who, " ", dir, ": cannot create directory (", ec.message(), ")");
}

void check_output_dir_writable(const std::string& output_dir) {
  LOOM_CHECK(!output_dir.empty(), "[TrainingArguments] output_dir: must not be empty");
  const std::error_code ec = make_dirs(output_dir);
  LOOM_CHECK(!ec, "[TrainingArguments] output_dir '", output_dir, "': cannot create it (",
             ec.message(), ")");
  const fs::path probe = fs::path(output_dir) / (".loom-write-probe-" + std::to_string(::getpid()));
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int err = errno;
  if (fd >= 0) {
    const ssize_t n = ::write(fd, "x", 1);
    err = n == 1 ? 0 : errno;
    ::close(fd);
    ::unlink(probe.c_str());
  }
  LOOM_CHECK(fd >= 0 && err == 0, "[TrainingArguments] output_dir '", output_dir,
             "': cannot write a file there (", std::strerror(err), ")");
}

void fsync_dir_tree(const std::string& dir) {
  for (const std::string& name : list_dir(dir)) {
    std::error_code ec;
    const fs::path p = fs::path(dir) / name;
    if (fs::is_regular_file(p, ec)) fsync_path(p, false);
  }
  fsync_path(dir, true);
}

std::optional<int64_t> checkpoint_step(const std::string& name) {
  const std::string prefix = kCheckpointPrefix;
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0)
    return std::nullopt;
  int64_t n = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || n > (INT64_MAX - 9) / 10) return std::nullopt;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}

bool same_dir(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
  return fs::path(a).lexically_normal() == fs::path(b).lexically_normal();
}

std::vector<std::string> sorted_checkpoints(const std::string& output_dir,
                                            const std::optional<std::string>& best) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  if (!fs::is_directory(output_dir, ec)) return {};
  for (const std::string& name : list_dir(output_dir)) {
    const fs::path p = fs::path(output_dir) / name;
    auto step = checkpoint_step(name);
    if (step && fs::is_directory(p, ec)) found.emplace_back(*step, p.string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& [step, path] : found) out.push_back(path);
  if (best && out.size() > 1 && !same_dir(out.back(), *best)) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const std::string& p) { return same_dir(p, *best); });
    if (it != out.end()) {
      std::string b = *it;
      out.erase(it);
      out.insert(out.end() - 1, b);
    }
  }
  return out;
}

void rotate_checkpoints(const std::string& output_dir, int64_t limit,
                        const std::optional<std::string>& best,
                        const std::optional<std::string>& just_saved) {
  if (limit <= 0) return;
  std::vector<std::string> ckpts = sorted_checkpoints(output_dir);
  if (static_cast<int64_t>(ckpts.size()) <= limit) return;
  auto is_protected = [&](const std::string& p) {
    return same_dir(p, ckpts.back()) || (best && same_dir(p, *best)) ||
           (just_saved && same_dir(p, *just_saved));
  };
  int64_t protected_count = 0;
  for (const auto& p : ckpts) protected_count += is_protected(p) ? 1 : 0;
  const int64_t keep = std::max(limit, protected_count);
  int64_t remaining = static_cast<int64_t>(ckpts.size());
  for (const auto& p : ckpts) {
    if (remaining <= keep) break;
    if (is_protected(p)) continue;
    std::error_code ec;
    fs::remove_all(p, ec);
    --remaining;
  }
}

namespace {

// "abandoned-20261207T173000Z" for the current UTC time; "-2", "-3", ...
// appended while that name is taken in `output_dir`.
fs::path free_abandoned_dir(const std::string& output_dir) {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  const std::string base = std::string(kAbandonedPrefix) + stamp;
  fs::path dir = fs::path(output_dir) / base;
  std::error_code ec;
  for (int i = 2; fs::exists(dir, ec); ++i)
    dir = fs::path(output_dir) / (base + "-" + std::to_string(i));
  return dir;
}

}  // namespace

AbandonedCheckpoints move_checkpoints_after(const std::string& output_dir, int64_t step,
                                            const std::string& keep) {
  AbandonedCheckpoints moved;
  fs::path to;
  for (const std::string& dir : sorted_checkpoints(output_dir)) {
    const std::string name = fs::path(dir).filename().string();
    if (*checkpoint_step(name) <= step || same_dir(dir, keep)) continue;
    if (to.empty()) {
      to = free_abandoned_dir(output_dir);
      create_dir(to.string(), "[checkpoint]");
    }
    std::error_code ec;
    fs::rename(dir, to / name, ec);
    LOOM_CHECK(!ec, "[checkpoint] ", dir, ": cannot move to ", (to / name).string(), " (",
               ec.message(), ")");
    moved.names.push_back(name);
  }
  if (to.empty()) return moved;
  fsync_path(to, true);
  fsync_path(output_dir, true);
  moved.dir = to.string();
  return moved;
}

std::vector<std::string> recover_replaced_checkpoints(const std::string& output_dir) {
  std::error_code ec;
  if (!fs::is_directory(output_dir, ec)) return {};
  std::vector<std::string> names = list_dir(output_dir);
  std::sort(names.begin(), names.end());
  std::vector<std::string> restored;
  for (const std::string& name : names) {
    const size_t mark = name.rfind(".old-");
    if (mark == std::string::npos || !checkpoint_step(name.substr(0, mark))) continue;
    const fs::path old = fs::path(output_dir) / name;
    const fs::path final_dir = fs::path(output_dir) / name.substr(0, mark);
    if (!fs::is_directory(old, ec)) continue;
    if (fs::exists(final_dir, ec)) {
      fs::remove_all(old, ec);  // commit_dir finished; only its cleanup was cut short
      continue;
    }
    fs::rename(old, final_dir, ec);
    LOOM_CHECK(!ec, "[checkpoint] ", old.string(), ": cannot rename back to ", final_dir.string(),
               " (", ec.message(), ")");
    restored.push_back(final_dir.filename().string());
  }
  return restored;
}

void remove_stale_tmp(const std::string& output_dir) {
  std::error_code ec;
  if (!fs::is_directory(output_dir, ec)) return;
  for (const std::string& name : list_dir(output_dir)) {
    const fs::path p = fs::path(output_dir) / name;
    if (name.find(kTmpCheckpointPrefix) != std::string::npos && fs::is_directory(p, ec))
      fs::remove_all(p, ec);
  }
}

const std::vector<std::string>& tokenizer_file_names() {
  static const std::vector<std::string> names = {"tokenizer.json",
                                                 "tokenizer_config.json",
                                                 "special_tokens_map.json",
                                                 "vocab.json",
                                                 "merges.txt",
                                                 "vocab.txt",
                                                 "added_tokens.json"};
  return names;
}

void copy_tokenizer_files(const std::string& src, const std::string& dst) {
  for (const std::string& name : tokenizer_file_names()) {
    fs::path from = fs::path(src) / name;
    std::error_code ec;
    if (!fs::is_regular_file(from, ec)) continue;
    write_text_file((fs::path(dst) / name).string(), read_text_file(from.string()));
  }
}

void commit_dir(const std::string& tmp, const std::string& final_dir) {
  fsync_dir_tree(tmp);
  std::error_code ec;
  const fs::path old = fs::path(final_dir).string() + ".old-" + std::to_string(::getpid());
  const bool had_old = fs::exists(final_dir, ec);
  if (had_old) {
    fs::remove_all(old, ec);
    fs::rename(final_dir, old, ec);
    LOOM_CHECK(!ec, "[checkpoint] ", final_dir, ": cannot move the old directory aside (",
               ec.message(), ")");
  }
  fs::rename(tmp, final_dir, ec);
  if (ec) {
    std::string why = ec.message();
    if (had_old) fs::rename(old, final_dir, ec);
    fail("[checkpoint] ", final_dir, ": cannot rename ", tmp, " into place (", why, ")");
  }
  fsync_path(
      fs::path(final_dir).parent_path().empty() ? fs::path(".") : fs::path(final_dir).parent_path(),
      true);
  if (had_old) fs::remove_all(old, ec);
}

std::string rng_state_json(const RngState& s) {
  nlohmann::json j = {
      {"generator", {{"seed", s.generator.seed}, {"offset", s.generator.offset}}},
      {"sampler",
       {{"seed", s.sampler_seed}, {"epoch", s.epoch}, {"batches_in_epoch", s.batches_in_epoch}}},
      {"running_loss",
       {{"tr_loss", s.tr_loss},
        {"globalstep_last_logged", s.globalstep_last_logged},
        {"total_loss_scalar", s.total_loss_scalar}}}};
  return j.dump(2) + "\n";
}

RngState parse_rng_state(const std::string& text, const std::string& where) {
  RngState s;
  io::check_json_depth(text, "[checkpoint] " + where);
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    s.generator.seed = j.at("generator").at("seed").get<uint64_t>();
    s.generator.offset = j.at("generator").at("offset").get<uint64_t>();
    s.sampler_seed = j.at("sampler").at("seed").get<uint64_t>();
    s.epoch = j.at("sampler").at("epoch").get<int64_t>();
    s.batches_in_epoch = j.at("sampler").at("batches_in_epoch").get<int64_t>();
    const auto& rl = j.at("running_loss");
    s.tr_loss = rl.at("tr_loss").get<double>();
    s.globalstep_last_logged = rl.at("globalstep_last_logged").get<int64_t>();
    s.total_loss_scalar = rl.at("total_loss_scalar").get<double>();
  } catch (const nlohmann::json::exception& e) {
    fail("[checkpoint] ", where, ": malformed rng_state.json (", e.what(), ")");
  }
  return s;
}

}  // namespace train
}  // namespace loom
