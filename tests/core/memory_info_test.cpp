// available_memory() and format_bytes() (core/memory_info.h): on Linux the
// number is /proc/meminfo's MemAvailable (or a lower cgroup limit), so it is
// positive and no larger than MemTotal; format_bytes uses decimal units.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "core/memory_info.h"

namespace loom {
namespace {

TEST(MemoryInfo, AvailableIsPositiveAndWithinMemTotal) {
  std::ifstream in("/proc/meminfo");
  if (!in) GTEST_SKIP() << "no /proc/meminfo on this system";
  std::string key, unit;
  uint64_t total_kb = 0, kb = 0;
  while (in >> key >> kb >> unit)
    if (key == "MemTotal:") total_kb = kb;
  std::optional<AvailableMemory> m = available_memory();
  ASSERT_TRUE(m.has_value());
  EXPECT_GT(m->bytes, 0u);
  EXPECT_LE(m->bytes, total_kb * 1024) << m->source;
  EXPECT_TRUE(m->source == "MemAvailable" || m->source == "cgroup memory.max") << m->source;
}

TEST(MemoryInfo, FormatBytesUsesDecimalUnits) {
  EXPECT_EQ(format_bytes(999), "999 B");
  EXPECT_EQ(format_bytes(1500), "1.5 kB");
  EXPECT_EQ(format_bytes(20e9), "20 GB");
  EXPECT_EQ(format_bytes(2.3e15), "2.3 PB");
  EXPECT_EQ(format_bytes(227e9), "227 GB");
}

}  // namespace
}  // namespace loom
