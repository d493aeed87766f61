// Soak: 3,000 optimizer steps of the tiny GPT-2 on `lazy` and on `lazy:sim`,
// the process's resident set sampled every 100 steps (/proc/self/statm); after
// step 200 (compiles, caches and allocator pools are warm by then) it may not
// grow by 2 MB or more. A leak of one small buffer, graph or metrics entry
// per step (~700 bytes a step) crosses that. Skips under AddressSanitizer,
// whose quarantine holds freed memory on purpose, and without /proc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "train/train_test_util.h"

namespace loom {
namespace {

// Resident bytes of this process (statm's second field, in pages); 0 if unknown.
int64_t soak_resident_bytes() {
  std::ifstream in("/proc/self/statm");
  int64_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return resident * static_cast<int64_t>(::sysconf(_SC_PAGESIZE));
}

// Samples the resident set at every 100th step.
class RssSampler : public TrainerCallback {
 public:
  std::string name() const override { return "RssSampler"; }
  void on_step_end(const TrainingArguments&, const TrainerState& s, TrainerControl&) override {
    if (s.global_step % 100 == 0) samples.emplace_back(s.global_step, soak_resident_bytes());
  }
  std::vector<std::pair<int64_t, int64_t>> samples;  // (step, bytes)
};

class Soak : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "AddressSanitizer's quarantine keeps freed memory resident";
#endif
    if (soak_resident_bytes() == 0) GTEST_SKIP() << "no /proc/self/statm";
    testing::reset_lazy_and_wait();
  }
};

TEST_P(Soak, ResidentSetIsFlatAfterStep200Of3000) {
  testing::TempDir dir;
  TrainingArguments a = testing::quiet_args(dir.path(), GetParam());
  a.per_device_train_batch_size = 4;
  a.max_steps = 3000;
  a.logging_steps = 500;
  Trainer t(testing::tiny_gpt2(3), a, testing::token_dataset(64));
  testing::silence(t);
  auto rss = std::make_shared<RssSampler>();
  t.add_callback(rss);
  t.train();
  ASSERT_EQ(rss->samples.size(), 30u);
  int64_t at_200 = 0, peak = 0, peak_step = 0;
  std::string table;
  for (const auto& [step, bytes] : rss->samples) {
    table += " " + std::to_string(step) + ":" + std::to_string(bytes / 1024) + "k";
    if (step == 200) at_200 = bytes;
    if (step >= 200 && bytes > peak) peak = bytes, peak_step = step;
  }
  std::printf("[soak %s] resident set every 100 steps:%s\n", GetParam().c_str(), table.c_str());
  EXPECT_LT(peak - at_200, 2 << 20) << "grew from " << at_200 << " bytes at step 200 to " << peak
                                    << " at step " << peak_step << ";" << table;
  EXPECT_EQ(t.state().global_step, 3000);
}

INSTANTIATE_TEST_SUITE_P(Devices, Soak, ::testing::Values("lazy", "lazy:sim"),
                         [](const auto& info) { return info.param == "lazy" ? "lazy" : "sim"; });

}  // namespace
}  // namespace loom
