// available_memory(): MemAvailable from /proc/meminfo (kB), capped by the
// process's cgroup memory limit (v2 or v1), else sysconf. See
// core/memory_info.h.
#include "core/memory_info.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>

namespace loom {
namespace {

// "MemAvailable:   22693652 kB" -> bytes.
std::optional<uint64_t> meminfo_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return std::nullopt;
}

std::optional<uint64_t> read_number(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return std::nullopt;
  try {
    return std::stoull(text);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// "inactive_file 123" in a cgroup's memory.stat -> 123.
std::optional<uint64_t> stat_field(const std::string& path, const std::string& field) {
  std::ifstream in(path);
  std::string key;
  uint64_t value = 0;
  while (in >> key >> value)
    if (key == field) return value;
  return std::nullopt;
}

// Limits at or above this mean "none" (cgroup v1 writes 2^63 rounded to a page).
constexpr uint64_t kNoLimit = uint64_t{1} << 62;

void lower_to(std::optional<AvailableMemory>& out, std::optional<uint64_t> room,
              const char* source) {
  if (room && (!out || *room < out->bytes)) out = AvailableMemory{*room, source};
}

}  // namespace

std::optional<uint64_t> cgroup_v1_memory_room(const std::string& cgroup_dir) {
  std::optional<uint64_t> limit = read_number((cgroup_dir + "/memory.limit_in_bytes").c_str());
  if (!limit || *limit >= kNoLimit) return std::nullopt;
  uint64_t usage = read_number((cgroup_dir + "/memory.usage_in_bytes").c_str()).value_or(0);
  const uint64_t inactive =
      stat_field(cgroup_dir + "/memory.stat", "total_inactive_file").value_or(0);
  usage = usage > inactive ? usage - inactive : 0;
  return *limit > usage ? *limit - usage : 0;
}

CgroupPaths parse_proc_cgroup(const std::string& text) {
  CgroupPaths out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && controllers.empty()) out.v2 = path;
    std::istringstream names(controllers);
    std::string name;
    while (std::getline(names, name, ','))
      if (name == "memory") out.v1_memory = path;
  }
  return out;
}

std::optional<uint64_t> cgroup_memory_room(const std::string& cgroup_dir) {
  std::optional<uint64_t> max = read_number((cgroup_dir + "/memory.max").c_str());
  if (!max) return std::nullopt;
  uint64_t current = read_number((cgroup_dir + "/memory.current").c_str()).value_or(0);
  // memory.current counts the page cache; its inactive part is reclaimed
  // before the limit is hit (as MemAvailable counts reclaimable cache).
  const uint64_t inactive = stat_field(cgroup_dir + "/memory.stat", "inactive_file").value_or(0);
  current = current > inactive ? current - inactive : 0;
  return *max > current ? *max - current : 0;
}

std::optional<uint64_t> least_cgroup_room(
    const std::string& mount, const std::string& path,
    const std::function<std::optional<uint64_t>(const std::string&)>& room) {
  std::optional<uint64_t> least = room(mount);
  // Each ancestor of `path` below the mount, then `path` itself: a parent's
  // limit binds its children (a job's cgroup under a limited slice or a
  // container's limit).
  for (size_t end = path.find('/', 1); !path.empty() && path != "/";
       end = path.find('/', end + 1)) {
    std::optional<uint64_t> r = room(mount + path.substr(0, end));
    if (r && (!least || *r < *least)) least = r;
    if (end == std::string::npos) break;
  }
  return least;
}

std::optional<AvailableMemory> available_memory() {
  std::optional<AvailableMemory> out;
  if (auto m = meminfo_available()) {
    out = AvailableMemory{*m, "MemAvailable"};
  } else {
    long pages = ::sysconf(_SC_AVPHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0)
      out = AvailableMemory{static_cast<uint64_t>(pages) * static_cast<uint64_t>(page), "sysconf"};
  }
  std::ifstream self("/proc/self/cgroup");
  std::stringstream text;
  text << self.rdbuf();
  const CgroupPaths own = parse_proc_cgroup(text.str());
  // The mount root first: in a container without a cgroup namespace (v1)
  // its own cgroup is the mounted root, while /proc/self/cgroup names the
  // host's path, which may not exist here.
  lower_to(out, least_cgroup_room("/sys/fs/cgroup", own.v2, cgroup_memory_room),
           "cgroup memory.max");
  lower_to(out, least_cgroup_room("/sys/fs/cgroup/memory", own.v1_memory, cgroup_v1_memory_room),
           "cgroup memory.limit_in_bytes");
  return out;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
  int u = 0;
  while (bytes >= 1000 && u < 6) {
    bytes /= 1000;
    ++u;
  }
  char buf[64];
  if (u == 6 && bytes >= 1000) {
    std::snprintf(buf, sizeof buf, "%.3g EB", bytes);
  } else {
    std::snprintf(buf, sizeof buf, bytes < 10 && u > 0 ? "%.1f %s" : "%.0f %s", bytes, units[u]);
  }
  return buf;
}

}  // namespace loom
