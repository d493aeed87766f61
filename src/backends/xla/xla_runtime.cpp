// The process's PJRT plugin and client, and run_mlir (xla_runtime.h).
#include "backends/xla/xla_runtime.h"

#include <atomic>
#include <iostream>
#include <memory>
#include <mutex>

#include "backends/xla/pjrt_client.h"
#include "backends/xla/plugin_discovery.h"
#include "loom/error.h"

namespace loom::backends::xla {
namespace {

// Discovery (cheap: file lookups) and loading (dlopen, PJRT_Client_Create)
// are separate, so that asking whether xla can run (the lazy device asks
// every registered backend at start-up) loads nothing.
struct XlaRuntimeState {
  std::once_flag found_once, loaded_once;
  std::string path, find_error;        // find_pjrt_plugin's result
  std::unique_ptr<PjrtClient> client;  // never destroyed: buffers may outlive statics
  std::string load_error;
  std::atomic<bool> loaded{false};
};

XlaRuntimeState& runtime_state() {
  static auto* s = new XlaRuntimeState;
  return *s;
}

XlaRuntimeState& found_state() {
  XlaRuntimeState& s = runtime_state();
  std::call_once(s.found_once, [&s] {
    try {
      s.path = find_pjrt_plugin();
    } catch (const Error& e) {
      s.find_error = e.what();
    }
  });
  return s;
}

XlaRuntimeState& loaded_state() {
  XlaRuntimeState& s = found_state();
  std::call_once(s.loaded_once, [&s] {
    if (s.find_error.empty()) {
      try {
        s.client = std::make_unique<PjrtClient>(PjrtPlugin::load(s.path));
        const PjrtClient& c = *s.client;
        std::cerr << "loom: xla: PJRT plugin " << s.path << " (PJRT C API " << c.plugin().version()
                  << ", platform " << c.platform_name() << ", " << c.device_count()
                  << " device(s))\n";
      } catch (const Error& e) {
        s.load_error = e.what();
        s.client.reset();
      }
    }
    s.loaded = true;
  });
  return s;
}

}  // namespace

std::string unavailable_xla_reason(bool load) {
  XlaRuntimeState& s = load ? loaded_state() : found_state();
  if (!s.find_error.empty()) return s.find_error;
  return s.loaded ? s.load_error : std::string();
}

const PjrtClient& xla_client() {
  XlaRuntimeState& s = loaded_state();
  LOOM_CHECK(s.client != nullptr, s.find_error.empty() ? s.load_error : s.find_error);
  return *s.client;
}

XlaInfo xla_info() {
  XlaInfo info;
  info.header_version = PjrtPlugin::header_version();
  XlaRuntimeState& s = loaded_state();
  if (!s.client) return info;
  info.plugin_path = s.client->plugin().path();
  info.api_version = s.client->plugin().version();
  info.platform_name = s.client->platform_name();
  info.platform_version = s.client->platform_version();
  info.device_count = s.client->device_count();
  info.device_kind = s.client->device_kind();
  return info;
}

std::vector<HostArray> run_mlir(const std::string& mlir, const std::vector<HostArray>& inputs,
                                int device) {
  const PjrtClient& client = xla_client();
  std::unique_ptr<PjrtExecutable> exe = client.compile(mlir);
  std::vector<std::unique_ptr<PjrtBuffer>> args;
  std::vector<PJRT_Buffer*> raw;
  for (const HostArray& in : inputs) {
    LOOM_CHECK(in.bytes.size() == in.type.nbytes(), "[xla] run_mlir: input ",
               ops::to_string(in.type), " has ", in.bytes.size(), " bytes, expected ",
               in.type.nbytes());
    args.push_back(client.from_host(in.bytes.data(), in.type, device));
    raw.push_back(args.back()->get());
  }
  std::vector<std::unique_ptr<PjrtBuffer>> outs = exe->execute(raw, client.device(device));
  std::vector<HostArray> result;
  for (const auto& out : outs) {
    HostArray a{out->type(), std::vector<std::byte>(out->nbytes())};
    if (out->nbytes()) client.to_host(*out, a.bytes.data());
    result.push_back(std::move(a));
  }
  return result;
}

}  // namespace loom::backends::xla
