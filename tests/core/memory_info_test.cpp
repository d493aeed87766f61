// available_memory() and format_bytes() (core/memory_info.h): on Linux the
// number is /proc/meminfo's MemAvailable (or a lower cgroup limit), so it is
// positive and no larger than MemTotal; format_bytes uses decimal units.
#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "common/temp_dir.h"
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
  EXPECT_TRUE(m->source == "MemAvailable" || m->source == "cgroup memory.max" ||
              m->source == "cgroup memory.limit_in_bytes")
      << m->source;
}

// The cgroup v2 room discounts the inactive page cache that memory.current
// counts (a machine that has read a large checkpoint is not out of memory).
TEST(MemoryInfo, CgroupRoomSubtractsInactivePageCache) {
  testing::TempDir dir;
  auto write = [&](const char* name, const std::string& text) {
    std::ofstream(dir.sub(name)) << text;
  };
  EXPECT_FALSE(cgroup_memory_room(dir.path()).has_value());  // no memory.max
  write("memory.max", "max\n");
  EXPECT_FALSE(cgroup_memory_room(dir.path()).has_value());  // no limit
  write("memory.max", "1000000\n");
  write("memory.current", "900000\n");
  EXPECT_EQ(cgroup_memory_room(dir.path()), 100000u);  // no memory.stat
  write("memory.stat", "anon 300000\nfile 600000\nactive_file 100000\ninactive_file 500000\n");
  EXPECT_EQ(cgroup_memory_room(dir.path()), 600000u);
  write("memory.current", "2000000\n");
  EXPECT_EQ(cgroup_memory_room(dir.path()), 0u);  // over the limit even without the cache
}

// cgroup v1's memory controller (a rank run inside
// /sys/fs/cgroup/memory/<name>, bench/fsdp_memory_limit.sh): the limit less
// the usage less the inactive page cache; 2^63 rounded down is "no limit".
TEST(MemoryInfo, CgroupV1RoomSubtractsInactivePageCache) {
  testing::TempDir dir;
  auto write = [&](const char* name, const std::string& text) {
    std::ofstream(dir.sub(name)) << text;
  };
  EXPECT_FALSE(cgroup_v1_memory_room(dir.path()).has_value());
  write("memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT_FALSE(cgroup_v1_memory_room(dir.path()).has_value());
  write("memory.limit_in_bytes", "5767168000\n");
  write("memory.usage_in_bytes", "2000000000\n");
  EXPECT_EQ(cgroup_v1_memory_room(dir.path()), 3767168000u);
  write("memory.stat", "cache 900000000\ninactive_file 1\ntotal_inactive_file 700000000\n");
  EXPECT_EQ(cgroup_v1_memory_room(dir.path()), 4467168000u);
  write("memory.usage_in_bytes", "9000000000\n");
  EXPECT_EQ(cgroup_v1_memory_room(dir.path()), 0u);
}

TEST(MemoryInfo, ProcSelfCgroupNamesTheV2AndTheV1MemoryPaths) {
  const CgroupPaths p = parse_proc_cgroup(
      "9:name=systemd:/\n8:pids:/\n4:memory:/loom_fsdp_limit\n2:cpu,cpuacct:/x\n0::/user.slice\n");
  EXPECT_EQ(p.v1_memory, "/loom_fsdp_limit");
  EXPECT_EQ(p.v2, "/user.slice");
  const CgroupPaths q = parse_proc_cgroup("0::/\n");
  EXPECT_EQ(q.v2, "/");
  EXPECT_EQ(q.v1_memory, "");
  EXPECT_EQ(parse_proc_cgroup("5:cpuset,memory:/a/b\ngarbage\n").v1_memory, "/a/b");
}

// A parent cgroup's limit binds its children: the least room over the
// mount, every ancestor and the process's own cgroup.
TEST(MemoryInfo, ThePathsAncestorsLimitsCount) {
  std::vector<std::string> asked;
  auto room = [&](const std::string& dir) -> std::optional<uint64_t> {
    asked.push_back(dir);
    if (dir == "/m/a") return 1000;
    if (dir == "/m/a/b/c") return 5000;
    return std::nullopt;
  };
  EXPECT_EQ(least_cgroup_room("/m", "/a/b/c", room), 1000u);
  EXPECT_EQ(asked, (std::vector<std::string>{"/m", "/m/a", "/m/a/b", "/m/a/b/c"}));
  asked.clear();
  EXPECT_EQ(least_cgroup_room("/m", "/a/b/c/", room), 1000u);  // a trailing slash
  asked.clear();
  EXPECT_FALSE(least_cgroup_room("/m", "/", room).has_value());
  EXPECT_EQ(asked, std::vector<std::string>{"/m"});
  EXPECT_FALSE(least_cgroup_room("/m", "", room).has_value());
  auto own_only = [](const std::string& dir) -> std::optional<uint64_t> {
    return dir == "/m/x" ? std::optional<uint64_t>(7) : std::nullopt;
  };
  EXPECT_EQ(least_cgroup_room("/m", "/x", own_only), 7u);
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
