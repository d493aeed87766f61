// find_pjrt_plugin (plugin_discovery.h): explicit path, then PJRT_DEVICE's
// known wheels in the project's venv, $VIRTUAL_ENV and python3's
// site-packages.
#include "backends/xla/plugin_discovery.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "core/settings.h"
#include "loom/error.h"

namespace loom::backends::xla {
namespace {

namespace fs = std::filesystem;

struct KnownWheel {
  const char* device;   // PJRT_DEVICE value
  const char* package;  // pip package name
  const char* file;     // path of the plugin inside site-packages
};

// PyPI packages of the PJRT plugins (the list; layouts as the wheels ship them).
constexpr KnownWheel kKnownWheels[] = {
    {"CPU", "xla-cpu-pjrt", "xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so"},
    {"CUDA", "jax-cuda12-pjrt", "jax_plugins/xla_cuda12/xla_cuda_plugin.so"},
    {"CUDA", "jax-cuda13-pjrt", "jax_plugins/xla_cuda13/xla_cuda_plugin.so"},
    {"ROCM", "jax-rocm7-pjrt", "jax_plugins/xla_rocm7/xla_rocm_plugin.so"},
    {"TPU", "libtpu", "libtpu/libtpu.so"},
};

std::mutex& discovery_mutex() {
  static std::mutex mu;
  return mu;
}
std::string& explicit_plugin_path() {
  static std::string path;
  return path;
}

// lib/python3*/site-packages under a virtual environment's root.
void add_venv_site_packages(const fs::path& root, std::vector<std::string>& out) {
  std::error_code ec;
  fs::path lib = root / "lib";
  if (!fs::is_directory(lib, ec)) return;
  for (const auto& entry : fs::directory_iterator(lib, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("python3", 0) != 0) continue;
    fs::path site = entry.path() / "site-packages";
    if (fs::is_directory(site, ec)) out.push_back(site.string());
  }
}

// python3's own site-packages folders (one per line), or none without python3.
void add_python_site_packages(std::vector<std::string>& out) {
  FILE* p = popen(
      "python3 -c 'import site; print(\"\\n\".join(site.getsitepackages() + "
      "[site.getusersitepackages()]))' 2>/dev/null",
      "r");
  if (p == nullptr) return;
  std::array<char, 4096> line{};
  while (std::fgets(line.data(), line.size(), p) != nullptr) {
    std::string dir(line.data());
    while (!dir.empty() && (dir.back() == '\n' || dir.back() == '\r')) dir.pop_back();
    if (!dir.empty()) out.push_back(dir);
  }
  pclose(p);
}

std::string pjrt_device_name() {
  const char* d = settings::environment("PJRT_DEVICE");
  std::string device = d && *d ? d : "CPU";
  for (char& c : device) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (device == "GPU") device = "CUDA";  // PyTorch/XLA's older name
  return device;
}

}  // namespace

void set_pjrt_plugin_path(std::string path) {
  std::lock_guard<std::mutex> lock(discovery_mutex());
  explicit_plugin_path() = std::move(path);
}

// The project's venv and $VIRTUAL_ENV: no process started.
std::vector<std::string> venv_search_dirs() {
  std::vector<std::string> dirs;
  add_venv_site_packages(fs::path(LOOM_SOURCE_DIR) / ".venv", dirs);
  if (const char* venv = settings::environment("VIRTUAL_ENV"); venv && *venv)
    add_venv_site_packages(venv, dirs);
  return dirs;
}

std::vector<std::string> pjrt_search_dirs() {
  std::vector<std::string> dirs = venv_search_dirs();
  add_python_site_packages(dirs);
  return dirs;
}

std::string find_pjrt_plugin() {
  std::string path;
  {
    std::lock_guard<std::mutex> lock(discovery_mutex());
    path = explicit_plugin_path();
  }
  const char* flag = "--xla_plugin";
  if (path.empty()) {
    if (const std::string& env = settings::text(Setting::pjrt_plugin); !env.empty()) {
      path = env;
      flag = "LOOM_PJRT_PLUGIN";
    }
  }
  std::error_code ec;
  if (!path.empty()) {
    LOOM_CHECK(fs::is_regular_file(path, ec), "[xla] ", flag, " ", path,
               ": no such file (expected a PJRT plugin .so exporting GetPjrtApi)");
    return path;
  }
  std::string device = pjrt_device_name();
  if (device == "TPU") {
    if (const char* tpu = settings::environment("TPU_LIBRARY_PATH"); tpu && *tpu) return tpu;
  }
  std::string packages, known;
  for (const KnownWheel& w : kKnownWheels) {
    if (known.find(w.device) == std::string::npos)
      known += (known.empty() ? "" : ", ") + std::string(w.device);
    if (device != w.device) continue;
    packages += (packages.empty() ? "" : " or ") + std::string(w.package);
  }
  LOOM_CHECK(!packages.empty(), "[xla] PJRT_DEVICE=", device, " is not one loom knows (", known,
             "); name the plugin's .so with --xla_plugin PATH / LOOM_PJRT_PLUGIN=PATH");
  // The venvs first: asking python3 for its site-packages starts a process.
  std::vector<std::string> dirs = venv_search_dirs();
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) add_python_site_packages(dirs);
    for (const KnownWheel& w : kKnownWheels) {
      if (device != w.device) continue;
      for (const std::string& dir : dirs) {
        fs::path candidate = fs::path(dir) / w.file;
        if (fs::is_regular_file(candidate, ec)) return candidate.string();
      }
    }
  }
  std::string looked;
  for (const std::string& dir : dirs) looked += (looked.empty() ? "" : ", ") + dir;
  fail("[xla] no PJRT plugin for PJRT_DEVICE=", device, ": install it with `pip install ", packages,
       "` (looked in ", looked.empty() ? "no site-packages" : looked,
       "), or name the plugin's .so with --xla_plugin PATH / LOOM_PJRT_PLUGIN=PATH");
}

}  // namespace loom::backends::xla
