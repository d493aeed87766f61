// available_memory(): MemAvailable from /proc/meminfo (kB), capped by a
// cgroup v2 memory limit, else sysconf. See core/memory_info.h.
#include "core/memory_info.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
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

}  // namespace

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

std::optional<AvailableMemory> available_memory() {
  std::optional<AvailableMemory> out;
  if (auto m = meminfo_available()) {
    out = AvailableMemory{*m, "MemAvailable"};
  } else {
    long pages = ::sysconf(_SC_AVPHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0)
      out = AvailableMemory{static_cast<uint64_t>(pages) * static_cast<uint64_t>(page), "sysconf"};
  }
  if (auto room = cgroup_memory_room("/sys/fs/cgroup"); room && (!out || *room < out->bytes))
    out = AvailableMemory{*room, "cgroup memory.max"};
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
