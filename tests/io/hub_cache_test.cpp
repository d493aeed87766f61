// Hub ids resolved from a local Hugging Face cache (loom/hub.h): a cache
// laid out as huggingface_hub writes it (models--ORG--NAME/refs/main holding a
// commit hash, snapshots/<hash>/), found through HF_HUB_CACHE or HF_HOME; a
// --revision naming another ref or a commit; a missing id is one error line
// saying loom does not download and giving the `hf download` command; an
// adapter's relative base_model_name_or_path as peft resolves it (current
// directory), then relative to the adapter; the error names the field.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "common/temp_dir.h"
#include "loom/error.h"
#include "loom/hub.h"

namespace loom::testing {
namespace {
namespace fs = std::filesystem;

const std::string kHubMain = "1111111111111111111111111111111111111111";
const std::string kHubOther = "2222222222222222222222222222222222222222";

// Sets an environment variable for the test's lifetime (restores it after).
class HubScopedEnv {
 public:
  HubScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~HubScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// <cache>/models--<folder>: refs/main -> kHubMain, refs/v2 -> kHubOther, both snapshots.
std::string make_hub_repo(const std::string& cache, const std::string& folder) {
  fs::path repo = fs::path(cache) / ("models--" + folder);
  fs::create_directories(repo / "refs");
  fs::create_directories(repo / "snapshots" / kHubMain);
  fs::create_directories(repo / "snapshots" / kHubOther);
  std::ofstream(repo / "refs" / "main") << kHubMain;  // huggingface_hub writes no newline
  std::ofstream(repo / "refs" / "v2") << kHubOther << "\n";
  return repo.string();
}

TEST(HubCache, ResolvesIdsThroughHfHubCacheAndRevisions) {
  TempDir dir;
  HubScopedEnv cache("HF_HUB_CACHE", dir.path().c_str());
  std::string repo = make_hub_repo(dir.path(), "Qwen--Qwen2-0.5B");
  EXPECT_EQ(resolve_model_dir("Qwen/Qwen2-0.5B", "main", "--model_name_or_path"),
            repo + "/snapshots/" + kHubMain);
  EXPECT_EQ(resolve_model_dir("Qwen/Qwen2-0.5B", "v2", "--model_name_or_path"),
            repo + "/snapshots/" + kHubOther);
  EXPECT_EQ(resolve_model_dir("Qwen/Qwen2-0.5B", kHubOther, "--model_name_or_path"),
            repo + "/snapshots/" + kHubOther);
  EXPECT_FALSE(find_cached_snapshot("Qwen/Qwen2-0.5B", "v3").has_value());
  EXPECT_FALSE(find_cached_snapshot("Qwen/Other", "main").has_value());
}

TEST(HubCache, HfHomeGivesItsHubFolderAndAnIdWithoutOrg) {
  TempDir dir;
  HubScopedEnv no_cache("HF_HUB_CACHE", nullptr);
  HubScopedEnv no_old("HUGGINGFACE_HUB_CACHE", nullptr);
  HubScopedEnv home("HF_HOME", dir.path().c_str());
  EXPECT_EQ(hf_hub_cache_dir(), dir.path() + "/hub");
  std::string repo = make_hub_repo(dir.path() + "/hub", "gpt2");
  EXPECT_EQ(resolve_model_dir("gpt2", "main", "--model_name_or_path"),
            repo + "/snapshots/" + kHubMain);
}

// huggingface_hub expands "~" in HF_HOME / HF_HUB_CACHE (os.path.expanduser).
TEST(HubCache, ATildeInTheCacheVariablesIsTheHomeDirectory) {
  TempDir dir;
  HubScopedEnv home_dir("HOME", dir.path().c_str());
  HubScopedEnv cache("HF_HUB_CACHE", "~/hubcache");
  EXPECT_EQ(hf_hub_cache_dir(), dir.path() + "/hubcache");
  HubScopedEnv no_cache("HF_HUB_CACHE", nullptr);
  HubScopedEnv no_old("HUGGINGFACE_HUB_CACHE", nullptr);
  HubScopedEnv hf_home("HF_HOME", "~");
  EXPECT_EQ(hf_hub_cache_dir(), dir.path() + "/hub");
  HubScopedEnv other_user("HF_HOME", "~bob/x");  // ~user is left as written
  EXPECT_EQ(hf_hub_cache_dir(), "~bob/x/hub");
}

TEST(HubCache, ADirectoryWinsOverTheCache) {
  TempDir dir;
  HubScopedEnv cache("HF_HUB_CACHE", dir.path().c_str());
  make_hub_repo(dir.path(), "gpt2");
  fs::create_directories(dir.sub("gpt2"));
  EXPECT_EQ(resolve_model_dir(dir.sub("gpt2"), "main", "x"), dir.sub("gpt2"));
}

// Runs in `cwd` for its lifetime.
class HubScopedCwd {
 public:
  explicit HubScopedCwd(const std::string& cwd) : old_(fs::current_path()) {
    fs::current_path(cwd);
  }
  ~HubScopedCwd() { fs::current_path(old_); }

 private:
  fs::path old_;
};

TEST(HubCache, AMissingIdIsOneLineSayingHowToFetchIt) {
  TempDir dir;
  HubScopedEnv cache("HF_HUB_CACHE", dir.path().c_str());
  try {
    resolve_model_dir("openai-community/gpt2", "v1.0", "[model] --model_name_or_path");
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_NE(m.find("[model] --model_name_or_path 'openai-community/gpt2': no such directory"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("loom does not download"), std::string::npos) << m;
    EXPECT_NE(m.find("`hf download openai-community/gpt2 --revision v1.0`"), std::string::npos)
        << m;
    EXPECT_NE(m.find(dir.path()), std::string::npos) << m;
  }
  // A path that cannot be an id, a bare name and "dir/typo" whose "dir"
  // exists are mistyped paths: the plain message, no hub hint (issue 42).
  HubScopedCwd cwd(dir.path());
  fs::create_directories(dir.sub("out"));
  for (const char* typo : {"gpt2-mdoel", "out/modle", "./out/modle"}) {
    try {
      resolve_model_dir(typo, "main", "--x");
      ADD_FAILURE() << "no error for " << typo;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), std::string("--x '") + typo + "': no such directory");
    }
  }
  EXPECT_THROW(
      {
        try {
          resolve_model_dir("/no/such/dir", "main", "--x");
        } catch (const Error& e) {
          EXPECT_STREQ(e.what(), "--x '/no/such/dir': no such directory");
          throw;
        }
      },
      Error);
}

// "org/name@rev" is transformers' --revision spelled into the id: the error
// says so and lists what the cache holds; an unknown revision lists it too.
TEST(HubCache, AnIdWithARevisionAfterAtSaysWhatTheCacheHolds) {
  TempDir dir;
  HubScopedEnv cache("HF_HUB_CACHE", dir.path().c_str());
  make_hub_repo(dir.path(), "Qwen--Qwen2-0.5B");
  auto error_of = [](const std::string& id, const std::string& rev) -> std::string {
    try {
      resolve_model_dir(id, rev, "--model_name_or_path");
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  const std::string holds =
      "the cache holds refs main, v2 and snapshots 111111111111, 222222222222";
  std::string m = error_of("Qwen/Qwen2-0.5B@v2", "main");
  EXPECT_NE(m.find("--model_name_or_path 'Qwen/Qwen2-0.5B@v2': no such directory; a hub id takes "
                   "its revision from --revision, not '@': use 'Qwen/Qwen2-0.5B' with --revision "
                   "v2; " +
                   holds),
            std::string::npos)
      << m;
  m = error_of("Qwen/Qwen2-0.5B", "v3");
  EXPECT_NE(m.find("at revision 'v3'; " + holds + "; loom does not download"), std::string::npos)
      << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

// A snapshot's file is a link into blobs/; a link whose blob is gone (deleted,
// or a download that stopped) is named with the blob, not "no such file".
TEST(HubCache, ALinkToADeletedBlobIsNamedWithTheBlob) {
  TempDir dir;
  HubScopedEnv cache("HF_HUB_CACHE", dir.path().c_str());
  const fs::path repo = make_hub_repo(dir.path(), "org--tiny");
  fs::create_directories(repo / "blobs");
  std::ofstream(repo / "blobs" / "aaaa") << "{}";
  const fs::path snap = repo / "snapshots" / kHubMain;
  fs::create_symlink("../../blobs/aaaa", snap / "config.json");
  fs::create_symlink("../../blobs/bbbb", snap / "pytorch_model.bin");  // not read by loom
  EXPECT_EQ(resolve_model_dir("org/tiny", "main", "--m"), snap.string());
  fs::create_symlink("../../blobs/cccc", snap / "model.safetensors");
  try {
    resolve_model_dir("org/tiny", "main", "--m");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "[hub] " + (snap / "model.safetensors").string() + " links to " +
                  (repo / "blobs" / "cccc").string() +
                  ", which does not exist (a deleted blob or an interrupted download); fetch it "
                  "again with `hf download org/tiny`");
  }
}

TEST(HubCache, HubIdForm) {
  EXPECT_TRUE(is_hub_id("gpt2"));
  EXPECT_TRUE(is_hub_id("meta-llama/Llama-3.2-1B"));
  EXPECT_FALSE(is_hub_id("/abs/path"));
  EXPECT_FALSE(is_hub_id("./rel"));
  EXPECT_FALSE(is_hub_id("a/b/c"));
  EXPECT_FALSE(is_hub_id("a/../b"));
  EXPECT_FALSE(is_hub_id(""));
}

TEST(HubCache, AdapterBaseAsPeftThenBesideTheAdapter) {
  TempDir dir;
  HubScopedEnv cache("HF_HUB_CACHE", dir.sub("empty_cache").c_str());
  fs::create_directories(dir.sub("work/base"));
  fs::create_directories(dir.sub("work/adapter"));
  fs::create_directories(dir.sub("elsewhere"));
  {
    // peft: relative to the current directory.
    HubScopedCwd cwd(dir.sub("work"));
    EXPECT_EQ(resolve_adapter_base("adapter", "base"), "base");
  }
  {
    // From another directory: beside the adapter ("../base" from work/adapter).
    HubScopedCwd cwd(dir.sub("elsewhere"));
    EXPECT_EQ(fs::canonical(resolve_adapter_base(dir.sub("work/adapter"), "../base")),
              fs::canonical(dir.sub("work/base")));
  }
  try {
    resolve_adapter_base(dir.sub("work/adapter"), "missing_base");
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(dir.sub("work/adapter") + "/adapter_config.json: base_model_name_or_path "
                                               "'missing_base' is not a directory"),
              std::string::npos)
        << m;
    EXPECT_EQ(m.find("download"), std::string::npos) << m;  // a bare name: a path typo
  }
  try {
    resolve_adapter_base(dir.sub("work/adapter"), "some-org/missing_base");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fetch it with `hf download some-org/missing_base`"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace loom::testing
