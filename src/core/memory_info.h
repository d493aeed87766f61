// How much memory this process can still take, for size checks made before
// a large allocation (a model from config.json, a checkpoint): a clear error
// beats std::bad_alloc or the kernel's OOM killer half-way through.
// Assumes Linux: /proc/meminfo's MemAvailable (the kernel's estimate of what
// can be allocated without swapping), lowered to the cgroup v2 limit
// (/sys/fs/cgroup/memory.max minus memory.current, less the reclaimable
// inactive page cache of memory.stat; at the root and at the process's own
// cgroup of /proc/self/cgroup) or the cgroup v1 memory controller's
// (memory.limit_in_bytes minus memory.usage_in_bytes, less
// total_inactive_file) when one is set; elsewhere sysconf(_SC_AVPHYS_PAGES)
// x page size.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace loom {

/// What can be allocated now, in bytes, and where the number came from.
struct AvailableMemory {
  uint64_t bytes = 0;
  std::string
      source;  ///< "MemAvailable", "cgroup memory.max", "cgroup memory.limit_in_bytes" or "sysconf"
};

/// The memory available to this process now, or nullopt when the system says
/// nothing. Never throws.
std::optional<AvailableMemory> available_memory();

/// The room under the cgroup v2 limit of `cgroup_dir` (a folder holding
/// memory.max, memory.current and memory.stat, e.g. "/sys/fs/cgroup"): max -
/// (current - inactive_file), 0 when over; nullopt when memory.max is absent or
/// "max" (no limit). Never throws.
std::optional<uint64_t> cgroup_memory_room(const std::string& cgroup_dir);

/// The room under the cgroup v1 memory controller's limit of `cgroup_dir`
/// (memory.limit_in_bytes, memory.usage_in_bytes, memory.stat):
/// limit - (usage - total_inactive_file), 0 when over; nullopt without a
/// limit (absent, or 2^62 and more: v1's "none"). Never throws.
std::optional<uint64_t> cgroup_v1_memory_room(const std::string& cgroup_dir);

/// This process's cgroups, from the text of /proc/self/cgroup
/// ("hierarchy:controllers:path" lines): the v2 path ("0::/a/b") and the v1
/// memory controller's ("4:memory:/a"); empty when absent.
struct CgroupPaths {
  std::string v2, v1_memory;
};
CgroupPaths parse_proc_cgroup(const std::string& text);

/// The least room `room(dir)` gives over `mount`, each ancestor of `path`
/// below it and `path` itself (a cgroup path as /proc/self/cgroup names it,
/// "/a/b": mount, mount/a, mount/a/b): a parent cgroup's limit binds its
/// children. nullopt when none has a limit. Never throws if `room` does not.
std::optional<uint64_t> least_cgroup_room(
    const std::string& mount, const std::string& path,
    const std::function<std::optional<uint64_t>(const std::string&)>& room);

/// "1.5 GB", "640 MB", "12 kB" (decimal units, 2-3 significant digits).
std::string format_bytes(double bytes);

}  // namespace loom
