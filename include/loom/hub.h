// Hub ids from the local Hugging Face cache: `--model_name_or_path gpt2` or
// `Qwen/Qwen2-0.5B` resolves to the snapshot directory huggingface_hub left in
// its cache, as transformers' from_pretrained does with HF_HUB_OFFLINE=1.
// loom never downloads.
//
//   std::string dir = loom::resolve_model_dir("gpt2", "main", "--model_name_or_path");
//   // -> ~/.cache/huggingface/hub/models--gpt2/snapshots/<commit>
//
// The cache layout is huggingface_hub's (docs: "Understand caching"):
// <cache>/models--<org>--<name>/refs/<revision> holds a commit hash, and
// snapshots/<commit>/ holds the files. <cache> is $HF_HUB_CACHE, else
// $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace loom {

/// The hub cache directory from the environment (see the top of this file).
std::string hf_hub_cache_dir();

/// Whether `name` has the form of a hub model id: "name" or "org/name", each
/// part letters, digits, '-', '_', '.' (not starting with '.' or '-', no "..").
bool is_hub_id(const std::string& name);

/// The cached snapshot directory of hub id `repo_id` at `revision` (a branch
/// or tag with a refs/ file, or a commit hash with a snapshot), or nullopt
/// when the cache does not hold it.
std::optional<std::string> find_cached_snapshot(const std::string& repo_id,
                                                const std::string& revision = "main");

/// The same for a dataset repo: <cache>/datasets--<org>--<name>/snapshots/...
std::optional<std::string> find_cached_dataset_snapshot(const std::string& repo_id,
                                                        const std::string& revision = "main");

/// `name_or_path` when it is an existing directory; else, for a hub id, its
/// cached snapshot at `revision`. Otherwise throws loom::Error, one line naming
/// `what` (the flag or field): for "org/name" (an id whose "org" is not a
/// local directory) saying that loom does not download and giving the
/// command that fetches it ("hf download <id> [--revision R]"); for anything
/// else (a mistyped path) just "'<path>': no such directory".
std::string resolve_model_dir(const std::string& name_or_path, const std::string& revision,
                              const std::string& what);

}  // namespace loom

namespace loom {

/// The base model directory of the PEFT adapter in `adapter_dir`, from its
/// adapter_config.json's `base_model_name_or_path` (`base`), tried as peft's
/// AutoPeftModel does: a directory as written (relative to the current
/// directory), then a hub id in the cache; then, loom's addition, relative to
/// `adapter_dir` (so an adapter saved with "../base" still loads when run from
/// elsewhere). A hub id is looked up at `revision` (adapter_config.json's
/// `revision`, as peft passes it; "" = "main"). Throws loom::Error naming
/// base_model_name_or_path, the adapter's adapter_config.json and every place
/// tried.
std::string resolve_adapter_base(const std::string& adapter_dir, const std::string& base,
                                 const std::string& revision = "");

}  // namespace loom

namespace loom {

/// The directory of a dataset given as `--dataset_name`: an existing local
/// directory as it is, else "org/name[@rev]" (or "org/name" with `revision`,
/// "" = "main"; "@rev" wins) as its snapshot in the hub cache
/// (datasets--org--name/snapshots/<commit>, as `hf download --repo-type
/// dataset` leaves it). Throws loom::Error naming `what`, the repo, the
/// revision, the cache directory searched, and the command that fetches it
/// (loom never downloads). Implemented in src/io/hub_dataset.cpp.
std::string resolve_dataset_dir(const std::string& name, const std::string& revision,
                                const std::string& what);

/// The data files of one split of the dataset folder `dir` (a hub snapshot or
/// any local folder), sorted, by the file-name conventions of datasets'
/// data_files resolution (datasets/data_files.py, DEFAULT_PATTERNS_*): with
/// `config` non-empty only under dir/<config>/ (push_to_hub's layout for a
/// named config); the split named in the file name (train-00000-of-00002.parquet,
/// data/train.jsonl, train_1.json: the name, then '-', '_', '.', ' ' or a
/// digit), else files in a folder named after it (train/*.jsonl); "train"
/// also matches "training", "validation" "valid", "val" and "dev", "test"
/// "testing", "eval" and "evaluation" (datasets' keyword lists, tried in that
/// order). Only .parquet, .jsonl, .ndjson and .json files count; hidden
/// files and folders are skipped. Returns {} when no file matches. Throws
/// loom::Error naming `what` when `config` is not a folder of `dir` (listing
/// those that are), when the split's files have several formats, or when
/// (no config given) they lie in several top-level folders other than data/
/// (several configs: give --dataset_config).
std::vector<std::string> dataset_split_files(const std::string& dir, const std::string& split,
                                             const std::string& config, const std::string& what);

}  // namespace loom
