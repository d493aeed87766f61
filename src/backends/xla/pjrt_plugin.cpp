// PjrtPlugin (pjrt_client.h): dlopen, GetPjrtApi, the version check,
// PJRT_Plugin_Initialize, and PJRT_Error / PJRT_Event handling.
#include <dlfcn.h>

#include <map>
#include <mutex>

#include "backends/xla/pjrt_c.h"
#include "backends/xla/pjrt_client.h"
#include "loom/error.h"

namespace loom::backends::xla {
namespace {

// The last PJRT_Api field loom calls (the original part of the table, so
// every 0.x plugin since that has it).
constexpr size_t kPjrtApiNeeded = PJRT_STRUCT_SIZE(PJRT_Api, PJRT_Buffer_ReadyEvent);

// Every PJRT_Api entry loom calls unconditionally (the optional ones, such as
// PJRT_Executable_GetCompiledMemoryStats, are checked where they are used):
// a plugin whose table has a null one is refused at load, naming it, instead
// of crashing at the first call.
#define LOOM_PJRT_ENTRY(name)                                   \
  {                                                             \
#name, [](const PJRT_Api* a) { return a->name != nullptr; } \
  }
struct PjrtEntry {
  const char* name;
  bool (*present)(const PJRT_Api*);
};
constexpr PjrtEntry kPjrtEntries[] = {
    LOOM_PJRT_ENTRY(PJRT_Error_Destroy),
    LOOM_PJRT_ENTRY(PJRT_Error_Message),
    LOOM_PJRT_ENTRY(PJRT_Plugin_Initialize),
    LOOM_PJRT_ENTRY(PJRT_Event_Destroy),
    LOOM_PJRT_ENTRY(PJRT_Event_Await),
    LOOM_PJRT_ENTRY(PJRT_Client_Create),
    LOOM_PJRT_ENTRY(PJRT_Client_Destroy),
    LOOM_PJRT_ENTRY(PJRT_Client_PlatformName),
    LOOM_PJRT_ENTRY(PJRT_Client_PlatformVersion),
    LOOM_PJRT_ENTRY(PJRT_Client_AddressableDevices),
    LOOM_PJRT_ENTRY(PJRT_Client_Compile),
    LOOM_PJRT_ENTRY(PJRT_Client_BufferFromHostBuffer),
    LOOM_PJRT_ENTRY(PJRT_Executable_Destroy),
    LOOM_PJRT_ENTRY(PJRT_Executable_OutputElementTypes),
    LOOM_PJRT_ENTRY(PJRT_Executable_OutputDimensions),
    LOOM_PJRT_ENTRY(PJRT_Executable_Serialize),
    LOOM_PJRT_ENTRY(PJRT_Executable_DeserializeAndLoad),
    LOOM_PJRT_ENTRY(PJRT_LoadedExecutable_Destroy),
    LOOM_PJRT_ENTRY(PJRT_LoadedExecutable_GetExecutable),
    LOOM_PJRT_ENTRY(PJRT_LoadedExecutable_Execute),
    LOOM_PJRT_ENTRY(PJRT_Buffer_Destroy),
    LOOM_PJRT_ENTRY(PJRT_Buffer_IsDeleted),
    LOOM_PJRT_ENTRY(PJRT_Buffer_ToHostBuffer),
};
#undef LOOM_PJRT_ENTRY

// Throws loom::Error naming the plugin file and every null entry loom calls.
void check_pjrt_entries(const PJRT_Api* api, const std::string& path) {
  std::string missing;
  for (const PjrtEntry& e : kPjrtEntries)
    if (!e.present(api)) missing += (missing.empty() ? "" : ", ") + std::string(e.name);
  LOOM_CHECK(missing.empty(), "[xla] plugin ", path,
             ": its PJRT_Api table has null entries that loom calls: ", missing,
             " (an incomplete or damaged plugin build)");
}

std::string pjrt_error_text(const PJRT_Api* api, PJRT_Error* error) {
  PJRT_Error_Message_Args m{};
  m.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE;
  m.error = error;
  api->PJRT_Error_Message(&m);
  return std::string(m.message, m.message_size);
}

}  // namespace

std::shared_ptr<PjrtPlugin> PjrtPlugin::load(const std::string& path) {
  static std::mutex mu;
  static auto* loaded = new std::map<std::string, std::shared_ptr<PjrtPlugin>>;  // never unloaded
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = loaded->find(path); it != loaded->end()) return it->second;

  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  LOOM_CHECK(handle != nullptr, "[xla] cannot load PJRT plugin ", path, ": ", dlerror());
  using GetApi = const PJRT_Api* (*)();
  auto get_api = reinterpret_cast<GetApi>(dlsym(handle, "GetPjrtApi"));
  LOOM_CHECK(get_api != nullptr, "[xla] ", path, " is not a PJRT plugin (no GetPjrtApi symbol)");
  const PJRT_Api* api = get_api();
  LOOM_CHECK(api != nullptr, "[xla] ", path, ": GetPjrtApi returned null");

  std::shared_ptr<PjrtPlugin> plugin(new PjrtPlugin());
  plugin->api_ = api;
  plugin->path_ = path;
  plugin->major_ = api->pjrt_api_version.major_version;
  plugin->minor_ = api->pjrt_api_version.minor_version;
  LOOM_CHECK(plugin->major_ == PJRT_API_MAJOR, "[xla] plugin ", path, " has PJRT C API ",
             plugin->version(), "; loom was built for ", header_version(),
             " (major versions must match: install a plugin built for API ", PJRT_API_MAJOR, ".x)");
  LOOM_CHECK(api->struct_size >= kPjrtApiNeeded, "[xla] plugin ", path, " has PJRT C API ",
             plugin->version(), ", older than the functions loom calls (built for ",
             header_version(), ")");
  check_pjrt_entries(api, path);

  PJRT_Plugin_Initialize_Args init{};
  init.struct_size = PJRT_Plugin_Initialize_Args_STRUCT_SIZE;
  plugin->check(api->PJRT_Plugin_Initialize(&init), "PJRT_Plugin_Initialize");
  (*loaded)[path] = plugin;
  return plugin;
}

std::string PjrtPlugin::version() const {
  return std::to_string(major_) + "." + std::to_string(minor_);
}

std::string PjrtPlugin::header_version() {
  return std::to_string(PJRT_API_MAJOR) + "." + std::to_string(PJRT_API_MINOR);
}

void PjrtPlugin::check(PJRT_Error* error, std::string_view what) const {
  if (error == nullptr) return;
  std::string text = pjrt_error_text(api_, error);
  PJRT_Error_Destroy_Args d{};
  d.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE;
  d.error = error;
  api_->PJRT_Error_Destroy(&d);
  fail("[xla] ", what, ": ", text);
}

PJRT_Error* PjrtPlugin::with_executable(
    PJRT_LoadedExecutable* loaded, const std::function<PJRT_Error*(PJRT_Executable*)>& use) const {
  PJRT_LoadedExecutable_GetExecutable_Args g{};
  g.struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE;
  g.loaded_executable = loaded;
  check(api_->PJRT_LoadedExecutable_GetExecutable(&g), "PJRT_LoadedExecutable_GetExecutable");
  PJRT_Error* e = use(g.executable);
  PJRT_Executable_Destroy_Args d{};
  d.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE;
  d.executable = g.executable;
  api_->PJRT_Executable_Destroy(&d);
  return e;
}

void PjrtPlugin::await(PJRT_Event* event, std::string_view what) const {
  if (event == nullptr) return;
  PJRT_Event_Await_Args a{};
  a.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE;
  a.event = event;
  PJRT_Error* status = api_->PJRT_Event_Await(&a);
  PJRT_Event_Destroy_Args d{};
  d.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE;
  d.event = event;
  PJRT_Error* destroyed = api_->PJRT_Event_Destroy(&d);
  check(status, what);
  check(destroyed, "PJRT_Event_Destroy");
}

}  // namespace loom::backends::xla
