// Hub ids -> snapshot directories of the local Hugging Face cache (loom/hub.h).
// Assumes huggingface_hub's cache layout: models--ORG--NAME/refs/REV holds a
// commit hash (no newline needed), snapshots/COMMIT/ the files (symlinks into
// blobs/, which std::filesystem follows).
#include "loom/hub.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <vector>

#include "core/settings.h"
#include "loom/error.h"

namespace loom {
namespace fs = std::filesystem;

namespace {

// The variable's value with a leading "~" or "~/" expanded to $HOME, as
// huggingface_hub's constants.py does (os.path.expanduser); "" when unset.
std::string hub_env(const char* name) {
  const char* v = settings::environment(name);
  std::string s = v ? std::string(v) : std::string();
  const char* home = settings::environment("HOME");
  if (home != nullptr && *home != 0 && !s.empty() && s[0] == '~' && (s.size() == 1 || s[1] == '/'))
    s = std::string(home) + s.substr(1);
  return s;
}

bool is_commit_hash(const std::string& s) {
  static const std::regex kHex("[0-9a-f]{40}");
  return std::regex_match(s, kHex);
}

// huggingface_hub's current CLI (`huggingface-cli` is deprecated since 0.34).
std::string download_hint(const std::string& id, const std::string& revision) {
  std::string cmd = "hf download " + id;
  if (revision != "main") cmd += " --revision " + revision;
  return cmd;
}

// Whether a missing `name` should get the hub's fetch hint: "org/name" in
// the id form, whose "org" is not a local directory (then it is a mistyped
// path, as "out/modle"). A bare "name" is far likelier a local typo than one
// of the hub's few ids without an org.
bool looks_like_hub_repo(const std::string& name) {
  const size_t slash = name.find('/');
  std::error_code ec;
  return slash != std::string::npos && is_hub_id(name) &&
         !fs::is_directory(name.substr(0, slash), ec);
}

// <cache>/models--ORG--NAME of a hub id (datasets--ORG--NAME for a dataset).
fs::path hub_repo_dir(const std::string& repo_id, const char* kind = "models") {
  std::string folder = std::string(kind) + "--" + repo_id;
  if (size_t slash = folder.find('/'); slash != std::string::npos) folder.replace(slash, 1, "--");
  return fs::path(hf_hub_cache_dir()) / folder;
}

// "; the cache holds revisions main, v2 (refs/) and snapshots 1111111, ..."
// or "" when the cache has no folder for the id.
std::string cached_revisions_note(const std::string& repo_id) {
  const fs::path repo = hub_repo_dir(repo_id);
  std::error_code ec;
  if (!fs::is_directory(repo, ec)) return "";
  auto names = [&](const fs::path& dir, size_t width) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir, ec))
      out.push_back(e.path().filename().string().substr(0, width));
    std::sort(out.begin(), out.end());
    std::string text;
    for (const std::string& n : out) text += (text.empty() ? "" : ", ") + n;
    return text.empty() ? std::string("none") : text;
  };
  return "; the cache holds refs " + names(repo / "refs", std::string::npos) + " and snapshots " +
         names(repo / "snapshots", 12);
}

// A link in a snapshot whose blob is gone (deleted, or a download that was
// interrupted): named with its blob, instead of "no such file" later. Only
// the files loom reads (.json, .safetensors, .txt, .model, .jinja).
void check_snapshot_links(const fs::path& snapshot, const std::string& repo_id,
                          const std::string& revision) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(snapshot, ec)) {
    const std::string ext = e.path().extension().string();
    if (ext != ".json" && ext != ".safetensors" && ext != ".txt" && ext != ".model" &&
        ext != ".jinja")
      continue;
    std::error_code lec;
    if (!fs::is_symlink(e.symlink_status(lec))) continue;
    std::error_code sec;
    if (fs::exists(fs::status(e.path(), sec))) continue;
    const fs::path target = fs::read_symlink(e.path(), lec);
    const fs::path blob =
        target.is_absolute() ? target : (e.path().parent_path() / target).lexically_normal();
    fail("[hub] ", e.path().string(), " links to ", blob.string(),
         ", which does not exist (a deleted blob or an interrupted download); fetch it again "
         "with `",
         download_hint(repo_id, revision), "`");
  }
}

}  // namespace

std::string hf_hub_cache_dir() {
  if (std::string d = hub_env("HF_HUB_CACHE"); !d.empty()) return d;
  if (std::string d = hub_env("HUGGINGFACE_HUB_CACHE"); !d.empty()) return d;  // older name
  if (std::string d = hub_env("HF_HOME"); !d.empty()) return (fs::path(d) / "hub").string();
  if (std::string d = hub_env("XDG_CACHE_HOME"); !d.empty())
    return (fs::path(d) / "huggingface" / "hub").string();
  return (fs::path(hub_env("HOME")) / ".cache" / "huggingface" / "hub").string();
}

bool is_hub_id(const std::string& name) {
  static const std::regex kId("[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)?");
  return name.size() <= 200 && std::regex_match(name, kId) && name.find("..") == std::string::npos;
}

namespace {

std::optional<std::string> find_snapshot(const std::string& repo_id, const std::string& revision,
                                         const char* kind) {
  if (!is_hub_id(repo_id) || revision.empty() || revision.find("..") != std::string::npos)
    return std::nullopt;
  const fs::path repo = hub_repo_dir(repo_id, kind);
  std::string commit = revision;
  std::ifstream ref(repo / "refs" / revision);
  if (ref.good()) {
    std::getline(ref, commit);
    while (!commit.empty() && std::isspace(static_cast<unsigned char>(commit.back())))
      commit.pop_back();
  }
  if (!is_commit_hash(commit)) return std::nullopt;
  std::error_code ec;
  const fs::path snapshot = repo / "snapshots" / commit;
  if (!fs::is_directory(snapshot, ec)) return std::nullopt;
  return snapshot.string();
}

}  // namespace

std::optional<std::string> find_cached_snapshot(const std::string& repo_id,
                                                const std::string& revision) {
  return find_snapshot(repo_id, revision, "models");
}

std::optional<std::string> find_cached_dataset_snapshot(const std::string& repo_id,
                                                        const std::string& revision) {
  return find_snapshot(repo_id, revision, "datasets");
}

std::string resolve_model_dir(const std::string& name_or_path, const std::string& revision,
                              const std::string& what) {
  std::error_code ec;
  if (fs::is_directory(name_or_path, ec)) return name_or_path;
  // "org/name@rev": the revision is a flag of its own, as in transformers.
  if (size_t at = name_or_path.rfind('@'); at != std::string::npos &&
                                           is_hub_id(name_or_path.substr(0, at)) &&
                                           !is_hub_id(name_or_path)) {
    const std::string id = name_or_path.substr(0, at), rev = name_or_path.substr(at + 1);
    fail(what, " '", name_or_path, "': no such directory; a hub id takes its revision from ",
         "--revision, not '@': use '", id, "' with --revision ", rev, cached_revisions_note(id));
  }
  if (auto snapshot = find_cached_snapshot(name_or_path, revision)) {
    check_snapshot_links(*snapshot, name_or_path, revision);
    return *snapshot;
  }
  if (!looks_like_hub_repo(name_or_path)) fail(what, " '", name_or_path, "': no such directory");
  fail(what, " '", name_or_path, "': no such directory, and the Hugging Face cache (",
       hf_hub_cache_dir(), ") holds no snapshot of it at revision '", revision, "'",
       cached_revisions_note(name_or_path), "; loom does not download: fetch it with `",
       download_hint(name_or_path, revision), "`");
}

}  // namespace loom

namespace loom {

std::string resolve_adapter_base(const std::string& adapter_dir, const std::string& base,
                                 const std::string& revision_or_empty) {
  const std::string revision = revision_or_empty.empty() ? "main" : revision_or_empty;
  const std::string config = (fs::path(adapter_dir) / "adapter_config.json").string();
  LOOM_CHECK(!base.empty(), config, ": base_model_name_or_path is empty: it must name the base ",
             "model (a directory or a hub id)");
  std::error_code ec;
  if (fs::is_directory(base, ec)) return base;
  if (auto snapshot = find_cached_snapshot(base, revision)) return *snapshot;
  const fs::path beside = fs::path(adapter_dir) / base;
  if (fs::path(base).is_relative() && fs::is_directory(beside, ec)) return beside.string();
  fail(config, ": base_model_name_or_path '", base, "' is not a directory (relative to the ",
       "current directory, as peft reads it, nor to the adapter's directory: ", beside.string(),
       ")",
       looks_like_hub_repo(base)
           ? " nor a hub id in the Hugging Face cache (" + hf_hub_cache_dir() + ") at revision '" +
                 revision + "'; loom does not download: fetch it with `" +
                 download_hint(base, revision) + "`"
           : std::string());
}

}  // namespace loom
