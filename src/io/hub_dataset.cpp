// Datasets from the local Hugging Face cache and their split files
// (loom/hub.h: resolve_dataset_dir, dataset_split_files). The cache layout is
// huggingface_hub's, as for models (hub.cpp), under datasets--ORG--NAME. The
// split conventions are those of datasets' data_files resolution
// (datasets/data_files.py: SPLIT_KEYWORDS, NON_WORDS_CHARS "-._ 0-9", the
// keyword-in-dir-name patterns tried before the keyword-in-file-name ones,
// and every file being "train" when no keyword matches); the README's
// `configs:` YAML is not read.
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "loom/error.h"
#include "loom/hub.h"

namespace loom {
namespace fs = std::filesystem;

namespace {

const std::map<std::string, std::vector<std::string>>& split_keywords() {
  static const std::map<std::string, std::vector<std::string>> k = {
      {"train", {"train", "training"}},
      {"validation", {"validation", "valid", "dev", "val"}},
      {"test", {"test", "testing", "eval", "evaluation"}}};
  return k;
}

std::vector<std::string> keywords_of(const std::string& split) {
  auto it = split_keywords().find(split);
  return it == split_keywords().end() ? std::vector<std::string>{split} : it->second;
}

bool is_sep(char c) {
  return c == '-' || c == '.' || c == '_' || c == ' ' || (c >= '0' && c <= '9');
}

// "{kw}[sep]*" or "*[sep]{kw}[sep]*": the keyword as a word of the name.
bool name_has_keyword(const std::string& name, const std::string& kw) {
  for (size_t at = name.find(kw); at != std::string::npos; at = name.find(kw, at + 1)) {
    const bool before = at == 0 || is_sep(name[at - 1]);
    const size_t end = at + kw.size();
    if (before && end < name.size() && is_sep(name[end])) return true;
  }
  return false;
}

// The folder's name alone is the keyword, or has it as a word ("{kw}/**", "*[sep]{kw}[sep]*/**").
bool dir_has_keyword(const std::string& dir, const std::string& kw) {
  return dir == kw || name_has_keyword(dir, kw);
}

bool is_data_file(const fs::path& p) {
  const std::string e = p.extension().string();
  return e == ".parquet" || e == ".jsonl" || e == ".ndjson" || e == ".json";
}

// Every data file under `root`, relative, sorted; hidden and "__" entries skipped.
std::vector<fs::path> data_files(const fs::path& root) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind('.', 0) == 0 || name.rfind("__", 0) == 0) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && is_data_file(it->path()))
      out.push_back(fs::relative(it->path(), root));
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool in_split_dir(const fs::path& rel, const std::vector<std::string>& keywords) {
  for (auto part = rel.begin(); part != rel.end() && std::next(part) != rel.end(); ++part)
    for (const std::string& kw : keywords)
      if (dir_has_keyword(part->string(), kw)) return true;
  return false;
}

bool named_for_split(const fs::path& rel, const std::vector<std::string>& keywords) {
  for (const std::string& kw : keywords)
    if (name_has_keyword(rel.filename().string(), kw)) return true;
  return false;
}

std::string list_text(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

// The split's files: by folder name when any split has a folder of its own
// (datasets tries those patterns first), else by file name, else (train) all.
std::vector<fs::path> match_split(const std::vector<fs::path>& files, const std::string& split) {
  bool any_dir = false, any_name = false;
  for (const auto& [name, kws] : split_keywords())
    for (const fs::path& f : files) {
      any_dir = any_dir || in_split_dir(f, kws);
      any_name = any_name || named_for_split(f, kws);
    }
  const std::vector<std::string> kws = keywords_of(split);
  any_dir = any_dir || std::any_of(files.begin(), files.end(),
                                   [&](const fs::path& f) { return in_split_dir(f, kws); });
  std::vector<fs::path> out;
  for (const fs::path& f : files) {
    if (any_dir ? in_split_dir(f, kws) : named_for_split(f, kws)) out.push_back(f);
  }
  if (out.empty() && !any_dir && !any_name && split == "train") return files;
  return out;
}

}  // namespace

std::string resolve_dataset_dir(const std::string& name, const std::string& revision_in,
                                const std::string& what) {
  std::error_code ec;
  if (fs::is_directory(name, ec)) return name;
  std::string id = name, revision = revision_in.empty() ? "main" : revision_in;
  if (size_t at = name.rfind('@'); at != std::string::npos) {
    id = name.substr(0, at);
    revision = name.substr(at + 1);
  }
  LOOM_CHECK(is_hub_id(id) && !revision.empty(), what, " '", name,
             "': no such directory, and not a hub dataset id (org/name[@revision])");
  if (auto snapshot = find_cached_dataset_snapshot(id, revision)) return *snapshot;
  std::string folder = "datasets--" + id;
  if (size_t slash = folder.find('/'); slash != std::string::npos) folder.replace(slash, 1, "--");
  const fs::path repo = fs::path(hf_hub_cache_dir()) / folder;
  fail(what, " '", name, "': the Hugging Face cache holds no snapshot of dataset ", id,
       " at revision '", revision, "' (searched ", (repo / "refs" / revision).string(), " and ",
       (repo / "snapshots").string(),
       "/; the cache is HF_HUB_CACHE, else HF_HOME/hub, else "
       "~/.cache/huggingface/hub); loom does not download: fetch it with `hf download ",
       id, " --repo-type dataset", revision == "main" ? "" : " --revision " + revision,
       "` (or `huggingface-cli download --repo-type dataset ", id, "`)");
}

std::vector<std::string> dataset_split_files(const std::string& dir, const std::string& split,
                                             const std::string& config, const std::string& what) {
  fs::path root = dir;
  std::error_code ec;
  if (!config.empty()) {
    root /= config;
    if (!fs::is_directory(root, ec)) {
      std::set<std::string> dirs;
      for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.is_directory() && e.path().filename().string()[0] != '.')
          dirs.insert(e.path().filename().string());
      fail(what, ": no folder '", config, "' for --dataset_config in ", dir,
           " (its folders: ", list_text(dirs), ")");
    }
  }
  const std::vector<fs::path> found = match_split(data_files(root), split);
  std::set<std::string> formats, tops;
  for (const fs::path& f : found) {
    formats.insert(f.extension().string());
    if (std::next(f.begin()) != f.end() && f.begin()->string() != "data")
      tops.insert(f.begin()->string());
  }
  LOOM_CHECK(formats.size() <= 1, what, ": split '", split, "' of ", root.string(),
             " has files of several formats (", list_text(formats),
             "); give one with --train_file");
  LOOM_CHECK(!config.empty() || tops.size() <= 1, what, ": split '", split, "' of ", root.string(),
             " has files in several folders (", list_text(tops),
             "): several configs; give one with --dataset_config");
  std::vector<std::string> out;
  for (const fs::path& f : found) out.push_back((root / f).string());
  return out;
}

}  // namespace loom
