// libFuzzer harness: a sharded checkpoint's model.safetensors.index.json
// (io::PretrainedWeights::open: the weight_map, shard names that must stay
// inside the directory, tensors mapped to shards that must hold them). The
// input is the index of a scratch directory that also holds two valid shards
// (model-00001-of-00002.safetensors with "a", model-00002-of-00002 with "b").
// An index that opens must give entries whose bytes lie inside their shard.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz_util.h"
#include "io/pretrained_files.h"
#include "loom/safetensors.h"

namespace {

const std::string& shard_dir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/loom_fuzz_shards_XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    if (d == nullptr) std::abort();
    const float a[4] = {1, 2, 3, 4}, b[2] = {5, 6};
    loom::safetensors::save(std::string(d) + "/model-00001-of-00002.safetensors",
                            {{"a", loom::DType::f32, {2, 2}, a}});
    loom::safetensors::save(std::string(d) + "/model-00002-of-00002.safetensors",
                            {{"b", loom::DType::f32, {2}, b}});
    return std::string(d);
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& dir = shard_dir();
  {
    std::ofstream out(dir + "/model.safetensors.index.json", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  loom::fuzz::run_guarded("shard_index", [&] {
    loom::io::PretrainedWeights w = loom::io::PretrainedWeights::open(dir);
    for (const auto& e : w.entries()) {
      if (e.file >= w.files().size()) std::abort();
      if (w.data(e).size() != e.info->nbytes) std::abort();
    }
  });
  return 0;
}
