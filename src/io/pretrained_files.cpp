// Reading and atomically writing save_pretrained directories
// (io/pretrained_files.h). Assumes POSIX rename semantics.
#include "io/pretrained_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "io/config_json.h"
#include "io/json_parse.h"
#include "loom/error.h"

namespace loom::io {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A lock file another module holds open (a regular file named "*.lock").
bool is_lock_file(const std::string& name, const fs::directory_entry& entry) {
  const std::string suffix = ".lock";
  return name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 &&
         entry.is_regular_file();
}

// A name in the directory: no path separator, no control character (a NUL
// would cut the name short when the file is opened: "x.safetensors\0junk"
// would open x.safetensors), not "." or "..".
bool is_plain_file_name(const std::string& name) {
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7f || c == '/' || c == '\\') return false;
  return !name.empty() && name != "." && name != "..";
}

// The shard names listed by an index file, checked.
std::map<std::string, std::string> read_weight_map(const std::string& path) {
  std::string text = read_config_text(path);
  check_json_depth(text, "[from_pretrained] " + path);
  json j = json::parse(text, nullptr, false);
  LOOM_CHECK(!j.is_discarded() && j.is_object(), "[from_pretrained] ", path, ": not a JSON object");
  auto wm = j.find("weight_map");
  LOOM_CHECK(wm != j.end() && wm->is_object(), "[from_pretrained] ", path,
             ": no \"weight_map\" object");
  std::map<std::string, std::string> out;
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    LOOM_CHECK(it->is_string(), "[from_pretrained] ", path, ": weight_map entry '", it.key(),
               "' is not a file name");
    std::string file = it->get<std::string>();
    // The name as JSON text: a control character in it is shown escaped (\u0000).
    LOOM_CHECK(is_plain_file_name(file), "[from_pretrained] ", path, ": weight_map entry '",
               it.key(), "' names ", json(file).dump(), ", not a file in the directory");
    out[it.key()] = file;
  }
  LOOM_CHECK(!out.empty(), "[from_pretrained] ", path, ": weight_map is empty");
  return out;
}

void fsync_path(const fs::path& p) {
  int fd = ::open(p.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

std::string shard_name(size_t k, size_t n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", k + 1, n);
  return buf;
}

// Weight and config files of a save_pretrained directory (replaced, not kept).
bool is_model_file(const std::string& name) {
  if (name == kWeightsFile || name == kWeightsIndexFile || name == kConfigFile) return true;
  return name.rfind("model-", 0) == 0 && name.find("-of-") != std::string::npos &&
         name.size() > 12 && name.compare(name.size() - 12, 12, ".safetensors") == 0;
}

void write_files(const fs::path& tmp, const std::vector<std::pair<std::string, std::string>>& texts,
                 const std::vector<safetensors::TensorRef>& tensors, int64_t max_shard_size) {
  for (const auto& [name, text] : texts) write_text_atomic((tmp / name).string(), text);
  std::map<std::string, std::string> meta{{"format", "pt"}};
  std::vector<std::vector<size_t>> shards = plan_shards(tensors, max_shard_size);
  if (shards.size() <= 1) {
    safetensors::save((tmp / kWeightsFile).string(), tensors, meta);
    return;
  }
  json weight_map = json::object();
  int64_t total_size = 0, total_params = 0;
  for (size_t k = 0; k < shards.size(); ++k) {
    std::vector<safetensors::TensorRef> part;
    for (size_t i : shards[k]) {
      part.push_back(tensors[i]);
      weight_map[tensors[i].name] = shard_name(k, shards.size());
      total_params += numel(tensors[i].shape);
      total_size += numel(tensors[i].shape) * static_cast<int64_t>(dtype_size(tensors[i].dtype));
    }
    safetensors::save((tmp / shard_name(k, shards.size())).string(), part, meta);
  }
  json index = {{"metadata", {{"total_parameters", total_params}, {"total_size", total_size}}},
                {"weight_map", weight_map}};
  write_text_atomic((tmp / kWeightsIndexFile).string(), index.dump(2) + "\n");
}

// Whether `p` exists, with the error_code forms: a self-linking symlink
// (ELOOP) or an unreadable folder is a loom::Error naming the file, never a
// raw std::filesystem_error.
bool weights_file_exists(const fs::path& p, const std::string& what) {
  std::error_code ec;
  fs::file_status st = fs::status(p, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    fail("[from_pretrained] ", what, " '", p.string(), "': cannot read it (", ec.message(), ")");
  return fs::exists(st);
}

}  // namespace

PretrainedWeights PretrainedWeights::open(const std::string& dir) {
  PretrainedWeights w;
  fs::path d(dir);
  std::error_code dir_ec;
  LOOM_CHECK(fs::is_directory(d, dir_ec), "[from_pretrained] ", dir, ": not a directory");
  std::vector<std::string> names;
  std::map<std::string, std::string> weight_map;
  if (weights_file_exists(d / kWeightsFile, "weights file")) {
    names.push_back(kWeightsFile);
  } else if (weights_file_exists(d / kWeightsIndexFile, "index")) {
    weight_map = read_weight_map((d / kWeightsIndexFile).string());
    std::set<std::string> files;
    for (const auto& [tensor, file] : weight_map) files.insert(file);
    names.assign(files.begin(), files.end());
  } else {
    std::error_code bin_ec;
    bool bin = fs::exists(d / "pytorch_model.bin", bin_ec);
    fail("[from_pretrained] ", dir, ": no ", kWeightsFile, " or ", kWeightsIndexFile,
         bin ? " (pytorch_model.bin is not supported; convert it to safetensors)" : "");
  }
  std::map<std::string, std::string> seen;  // tensor -> file
  for (const std::string& name : names) {
    fs::path p = d / name;
    LOOM_CHECK(weights_file_exists(p, "shard"), "[from_pretrained] ",
               (d / kWeightsIndexFile).string(), ": shard '", name, "' does not exist");
    w.files_.push_back(safetensors::File::open(p.string()));
  }
  for (size_t f = 0; f < w.files_.size(); ++f) {
    for (const safetensors::TensorInfo& info : w.files_[f].tensors()) {
      auto [it, fresh] = seen.emplace(info.name, names[f]);
      LOOM_CHECK(fresh, "[from_pretrained] ", dir, ": tensor '", info.name, "' is in both ",
                 it->second, " and ", names[f]);
      w.entries_.push_back({info.name, f, &info});
    }
  }
  for (const auto& [tensor, file] : weight_map) {
    auto it = seen.find(tensor);
    LOOM_CHECK(it != seen.end() && it->second == file, "[from_pretrained] ",
               (d / kWeightsIndexFile).string(), ": weight_map puts '", tensor, "' in ", file,
               ", which does not hold it");
  }
  return w;
}

std::span<const std::byte> PretrainedWeights::data(const Entry& e) const {
  return files_.at(e.file).data(*e.info);
}

std::vector<std::vector<size_t>> plan_shards(const std::vector<safetensors::TensorRef>& tensors,
                                             int64_t max_shard_size) {
  std::vector<std::vector<size_t>> shards;
  std::vector<size_t> current;
  int64_t current_size = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    int64_t size = numel(tensors[i].shape) * static_cast<int64_t>(dtype_size(tensors[i].dtype));
    if (size > max_shard_size) {
      shards.push_back({i});
      continue;
    }
    if (current_size + size > max_shard_size) {
      shards.push_back(std::move(current));
      current.clear();
      current_size = 0;
    }
    current.push_back(i);
    current_size += size;
  }
  if (!current.empty()) shards.push_back(std::move(current));
  return shards;
}

void write_pretrained_dir(const std::string& dir,
                          const std::vector<std::pair<std::string, std::string>>& text_files,
                          const std::vector<safetensors::TensorRef>& tensors,
                          int64_t max_shard_size) {
  LOOM_CHECK(max_shard_size >= 1, "[save_pretrained] ", dir, ": max_shard_size must be >= 1, got ",
             max_shard_size);
  static std::atomic<int> counter{0};
  fs::path target = fs::absolute(fs::path(dir)).lexically_normal();
  if (target.filename().empty()) target = target.parent_path();
  fs::path parent = target.parent_path();
  std::string tag = std::to_string(::getpid()) + "-" + std::to_string(counter++);
  fs::path tmp = parent / ("." + target.filename().string() + ".tmp-" + tag);
  fs::path old = parent / ("." + target.filename().string() + ".old-" + tag);
  std::error_code ec;
  fs::create_directories(parent, ec);
  LOOM_CHECK(!ec, "[save_pretrained] ", dir, ": cannot create ", parent.string(), " (",
             ec.message(), ")");
  LOOM_CHECK(!fs::exists(target) || fs::is_directory(target), "[save_pretrained] ", dir,
             ": exists and is not a directory");
  fs::create_directory(tmp, ec);
  LOOM_CHECK(!ec, "[save_pretrained] ", dir, ": cannot create ", tmp.string(), " (", ec.message(),
             ")");
  try {
    write_files(tmp, text_files, tensors, max_shard_size);
    if (fs::exists(target)) {
      std::set<std::string> written;
      for (const auto& entry : fs::directory_iterator(tmp))
        written.insert(entry.path().filename().string());
      for (const auto& entry : fs::directory_iterator(target)) {
        std::string name = entry.path().filename().string();
        if (is_model_file(name) || written.count(name)) continue;
        if (is_lock_file(name, entry)) {
          fs::create_hard_link(entry.path(), tmp / name);  // same inode: the flock carries over
          continue;
        }
        fs::copy(entry.path(), tmp / name, fs::copy_options::recursive);
      }
    }
    fsync_path(tmp);
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(tmp, ec);
    fail("[save_pretrained] ", dir, ": ", e.what());
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  // Swap: the old directory moves aside, the new one takes its name; at every
  // instant one complete directory exists.
  bool had_old = fs::exists(target);
  if (had_old) {
    fs::rename(target, old, ec);
    if (ec) {
      fs::remove_all(tmp, ec);
      fail("[save_pretrained] ", dir, ": cannot move the old directory aside");
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    std::string why = ec.message();
    if (had_old) fs::rename(old, target, ec);
    fs::remove_all(tmp, ec);
    fail("[save_pretrained] ", dir, ": cannot rename into place (", why, ")");
  }
  fsync_path(parent);
  if (had_old) fs::remove_all(old, ec);
}

}  // namespace loom::io
