// Datasets in the local Hugging Face cache (src/io/hub_dataset.cpp):
// --dataset_name org/name[@rev] resolves to datasets--org--name/snapshots/<commit>
// of a fake cache (HF_HUB_CACHE, HF_HOME), or one error naming the repo, the
// folders searched and the download command; a dataset folder's split files
// follow datasets' conventions (sharded data/{split}-*, {split}.jsonl,
// keyword synonyms, split folders, configs); and task sft trains on the
// train split and evaluates the test split of a cached dataset.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/error_of.h"
#include "common/scoped_env.h"
#include "common/temp_dir.h"
#include "loom/hub.h"
#include "loom/job.h"
#include "loom/model_registry.h"

namespace loom {
namespace hub_dataset_test {
namespace fs = std::filesystem;
using testing::error_of;
using testing::ScopedEnv;
using testing::TempDir;

const std::string kSft = std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/sft";

// Empty files at the given paths under `root`.
void touch(const std::string& root, const std::vector<std::string>& files) {
  for (const std::string& f : files) {
    fs::create_directories((fs::path(root) / f).parent_path());
    std::ofstream(fs::path(root) / f) << "{}\n";
  }
}

// The file names of `paths` relative to `root`.
std::vector<std::string> rel(const std::string& root, const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& p : paths) out.push_back(fs::relative(p, root).string());
  return out;
}

// <cache>/datasets--ORG--NAME with refs/<ref> -> commit and snapshots/<commit>/.
std::string fake_snapshot(const std::string& cache, const std::string& id, const std::string& ref,
                          char digit) {
  std::string folder = "datasets--" + id;
  folder.replace(folder.find('/'), 1, "--");
  const fs::path repo = fs::path(cache) / folder;
  const std::string commit(40, digit);
  fs::create_directories(repo / "refs");
  fs::create_directories(repo / "snapshots" / commit);
  std::ofstream(repo / "refs" / ref) << commit;
  return (repo / "snapshots" / commit).string();
}

TEST(DatasetSplitFiles, FollowDatasetsNamingConventions) {
  TempDir d;
  const std::string hub = d.sub("hub");
  touch(hub, {"data/train-00001-of-00002.parquet", "data/train-00000-of-00002.parquet",
              "data/test-00000-of-00001.parquet", "README.md", ".gitattributes"});
  EXPECT_EQ(rel(hub, dataset_split_files(hub, "train", "", "t")),
            (std::vector<std::string>{"data/train-00000-of-00002.parquet",
                                      "data/train-00001-of-00002.parquet"}));
  EXPECT_EQ(rel(hub, dataset_split_files(hub, "test", "", "t")),
            (std::vector<std::string>{"data/test-00000-of-00001.parquet"}));
  EXPECT_TRUE(dataset_split_files(hub, "validation", "", "t").empty());
  // Keyword synonyms, words inside names, not prefixes of other words.
  const std::string flat = d.sub("flat");
  touch(flat, {"training.jsonl", "my_valid.jsonl", "validation_notes.txt", "evaluate.jsonl"});
  EXPECT_EQ(rel(flat, dataset_split_files(flat, "train", "", "t")),
            (std::vector<std::string>{"training.jsonl"}));
  EXPECT_EQ(rel(flat, dataset_split_files(flat, "validation", "", "t")),
            (std::vector<std::string>{"my_valid.jsonl"}));
  EXPECT_TRUE(dataset_split_files(flat, "test", "", "t").empty());  // "evaluate" is not "eval"
  // Split folders win over names; no keyword at all: every file is train.
  const std::string dirs = d.sub("dirs");
  touch(dirs, {"train/a.json", "train/b.json", "dev/x.json", "other_train.json"});
  EXPECT_EQ(rel(dirs, dataset_split_files(dirs, "train", "", "t")),
            (std::vector<std::string>{"train/a.json", "train/b.json"}));
  EXPECT_EQ(rel(dirs, dataset_split_files(dirs, "validation", "", "t")),
            (std::vector<std::string>{"dev/x.json"}));
  const std::string plain = d.sub("plain");
  touch(plain, {"chats.jsonl", "more.jsonl"});
  EXPECT_EQ(dataset_split_files(plain, "train", "", "t").size(), 2u);
  EXPECT_TRUE(dataset_split_files(plain, "test", "", "t").empty());
}

TEST(DatasetSplitFiles, ConfigsAndMixedFormats) {
  TempDir d;
  const std::string hub = d.sub("hub");
  touch(hub, {"en/train-00000-of-00001.parquet", "fr/train-00000-of-00001.parquet"});
  EXPECT_EQ(rel(hub, dataset_split_files(hub, "train", "fr", "t")),
            (std::vector<std::string>{"fr/train-00000-of-00001.parquet"}));
  std::string e = error_of([&] { dataset_split_files(hub, "train", "", "[sft] x"); });
  EXPECT_NE(e.find("[sft] x: split 'train' of " + hub +
                   " has files in several folders (en, fr): several configs; give one with "
                   "--dataset_config"),
            std::string::npos)
      << e;
  e = error_of([&] { dataset_split_files(hub, "train", "de", "[sft] x"); });
  EXPECT_NE(e.find("no folder 'de' for --dataset_config in " + hub + " (its folders: en, fr)"),
            std::string::npos)
      << e;
  const std::string mixed = d.sub("mixed");
  touch(mixed, {"train.jsonl", "train-1.parquet"});
  e = error_of([&] { dataset_split_files(mixed, "train", "", "[sft] x"); });
  EXPECT_NE(e.find("has files of several formats (.jsonl, .parquet)"), std::string::npos) << e;
}

TEST(ResolveDatasetDir, HubIdsAtRevisionsFromTheCacheElseOneErrorWithTheDownloadCommand) {
  TempDir d;
  const std::string main_snap = fake_snapshot(d.sub("hub"), "org/chats", "main", 'a');
  const std::string v2_snap = fake_snapshot(d.sub("hub"), "org/chats", "v2", 'b');
  {
    ScopedEnv cache("HF_HUB_CACHE", d.sub("hub"));
    EXPECT_EQ(resolve_dataset_dir("org/chats", "", "--dataset_name"), main_snap);
    EXPECT_EQ(resolve_dataset_dir("org/chats@v2", "", "--dataset_name"), v2_snap);
    EXPECT_EQ(resolve_dataset_dir("org/chats@" + std::string(40, 'b'), "", "x"), v2_snap);
    EXPECT_EQ(resolve_dataset_dir(d.path(), "", "x"), d.path());  // a folder as it is
    const std::string e =
        error_of([&] { resolve_dataset_dir("org/other@v3", "", "[sft] --dataset_name"); });
    EXPECT_NE(e.find("[sft] --dataset_name 'org/other@v3': the Hugging Face cache holds no "
                     "snapshot of dataset org/other at revision 'v3' (searched " +
                     d.sub("hub") + "/datasets--org--other/refs/v3 and " + d.sub("hub") +
                     "/datasets--org--other/snapshots/"),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("fetch it with `hf download org/other --repo-type dataset --revision v3`"),
              std::string::npos)
        << e;
  }
  ScopedEnv no_cache("HF_HUB_CACHE", std::nullopt);
  ScopedEnv home("HF_HOME", d.sub("hub"));  // the cache is HF_HOME/hub
  fs::rename(d.sub("hub"), d.sub("hub2"));
  fs::create_directories(d.sub("hub"));
  fs::rename(d.sub("hub2"), d.sub("hub/hub"));
  EXPECT_EQ(resolve_dataset_dir("org/chats", "main", "x"),
            d.sub("hub/hub/datasets--org--chats/snapshots/" + std::string(40, 'a')));
}

TEST(SftDatasetName, TrainsOnTheTrainSplitAndEvaluatesTheTestSplit) {
  TempDir d;
  const std::string snap = fake_snapshot(d.sub("hub"), "org/chats", "main", 'c');
  fs::create_directories(snap + "/data");
  // Two train shards (the same rows twice) and a test split: JSON lines, so
  // the test also runs in a build without pyarrow.
  fs::copy_file(kSft + "/loss_rows.jsonl", snap + "/data/train-00000-of-00002.jsonl");
  fs::copy_file(kSft + "/loss_rows.jsonl", snap + "/data/train-00001-of-00002.jsonl");
  fs::copy_file(kSft + "/messages_assistant_only.jsonl", snap + "/data/test-00000-of-00001.jsonl");
  fs::create_directories(d.sub("tok"));
  fs::copy_file(std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/tokenizers/qwen2/tokenizer.json",
                d.sub("tok/tokenizer.json"));
  fs::copy_file(kSft + "/qwen2_tokenizer_config.json", d.sub("tok/tokenizer_config.json"));
  Tokenizer tok = Tokenizer::from_pretrained(d.sub("tok"));
  ModelPlan plan;
  plan.task = kTaskSft;
  plan.max_positions = 4096;
  JobArguments job;
  job.task = kTaskSft;
  job.tokenizer_name = d.sub("tok");
  job.chat_template_path = kSft + "/chatml_generation.jinja";
  ScopedEnv cache("HF_HUB_CACHE", d.sub("hub"));
  job.dataset_name = "org/chats";
  JobData data = load_sft_data(job, plan, tok, true, true);
  JobArguments files = job;
  files.dataset_name.clear();
  files.train_file = kSft + "/loss_rows.jsonl";
  files.validation_file = kSft + "/messages_assistant_only.jsonl";
  JobData want = load_sft_data(files, plan, tok, true, true);
  ASSERT_EQ(data.train->size(), 2 * want.train->size());
  ASSERT_EQ(data.eval->size(), want.eval->size());
  auto ex = [](const JobData& j, bool train) {
    return std::dynamic_pointer_cast<const data::InMemoryDataset>(train ? j.train : j.eval)
        ->examples();
  };
  const int64_t n = want.train->size();
  for (int64_t i = 0; i < 2 * n; ++i)
    EXPECT_EQ(ex(data, true)[i].input_ids, ex(want, true)[i % n].input_ids) << i;
  for (int64_t i = 0; i < want.eval->size(); ++i)
    EXPECT_EQ(ex(data, false)[i].labels, ex(want, false)[i].labels) << i;
  // A split that is not there, and a dataset that is not cached: one error each.
  job.dataset_train_split = "training_extra";
  std::string e = error_of([&] { load_sft_data(job, plan, tok, true, false); });
  EXPECT_NE(e.find("[sft] --dataset_name 'org/chats' (split training_extra): no files of split "
                   "'training_extra' in " +
                   snap),
            std::string::npos)
      << e;
  job.dataset_name = "org/missing";
  e = error_of([&] { load_sft_data(job, plan, tok, true, false); });
  EXPECT_NE(e.find("hf download org/missing --repo-type dataset"), std::string::npos) << e;
  job.train_file = "x.jsonl";
  e = error_of([&] { load_sft_data(job, plan, tok, true, false); });
  EXPECT_NE(e.find("give --dataset_name or --train_file, not both"), std::string::npos) << e;
}

}  // namespace hub_dataset_test
}  // namespace loom
