// PJRT core: loom's thin C++ layer over the PJRT C API (OpenXLA's
// xla/pjrt/c/pjrt_c_api.h, the one interface every XLA device plugin
// exports through `GetPjrtApi`). PjrtPlugin dlopens a plugin .so, checks
// its API version against the header loom was built with and initializes
// it; PjrtClient is one PJRT_Client over it (its addressable devices,
// compile of StableHLO MLIR text, host <-> device copies); PjrtBuffer and
// PjrtExecutable own a PJRT_Buffer / PJRT_LoadedExecutable. Every call that
// returns a PJRT_Error throws loom::Error "[xla] <function>: <PJRT's message>";
// every PJRT_Event is awaited and destroyed before the call returns, so
// each method here is synchronous.
//
// Assumes: API major version 0 (the header's), minor >= 81 checked through
// PJRT_Api::struct_size (newer plugins keep older fields: the C API versions
// its structs by size). Single-process clients (no key-value store).
// Compiled only when CMake found pjrt_c_api.h (LOOM_WITH_PJRT); this header
// itself needs only forward declarations of the C types.
//
//   auto plugin = PjrtPlugin::load(".venv/.../xla_cpu_pjrt.so");
//   PjrtClient client(plugin);
//   auto exe = client.compile(mlir_text);      // output types from the executable
//   auto x = client.from_host(host, {{2, 3}, DType::f32}, 0);
//   auto outs = exe->execute({x.get()}, 0);
//   client.to_host(*outs[0], dst, outs[0]->nbytes());
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ops/attrs.h"

struct PJRT_Api;
struct PJRT_Client;
struct PJRT_Device;
struct PJRT_Buffer;
struct PJRT_LoadedExecutable;
struct PJRT_Executable;
struct PJRT_Error;
struct PJRT_Event;

namespace loom::backends::xla {

/// A loaded PJRT plugin (process-wide: a plugin is initialized once and
/// never unloaded, as PJRT requires).
class PjrtPlugin {
 public:
  /// dlopens `path`, calls its GetPjrtApi, refuses an API major version other
  /// than the header's ("[xla] plugin X has PJRT C API 1.2; loom was built
  /// for 0.81 (major versions must match)") and a plugin older than the
  /// fields loom calls, then runs PJRT_Plugin_Initialize. The same path
  /// loaded twice gives the same plugin. Throws loom::Error naming the path
  /// and dlerror()'s text when it cannot be loaded.
  static std::shared_ptr<PjrtPlugin> load(const std::string& path);

  const PJRT_Api* api() const { return api_; }
  const std::string& path() const { return path_; }
  int major_version() const { return major_; }
  int minor_version() const { return minor_; }
  /// "0.81"
  std::string version() const;
  /// The API version loom was built for (the header's): "0.81".
  static std::string header_version();

  /// Throws loom::Error "[xla] <what>: <message>" for a non-null `error`
  /// (destroying it); returns for nullptr.
  void check(PJRT_Error* error, std::string_view what) const;
  /// Awaits `event` (nullptr: returns), destroys it, checks its status.
  void await(PJRT_Event* event, std::string_view what) const;
  /// Calls `use(PJRT_Executable*)` (returning a PJRT_Error*, nullptr for
  /// success) on the executable behind `loaded`
  /// (PJRT_LoadedExecutable_GetExecutable), destroys that executable, and
  /// returns use's error unchecked: the caller checks or ignores it. Throws
  /// loom::Error when the executable cannot be got.
  PJRT_Error* with_executable(PJRT_LoadedExecutable* loaded,
                              const std::function<PJRT_Error*(PJRT_Executable*)>& use) const;

 private:
  PjrtPlugin() = default;
  const PJRT_Api* api_ = nullptr;
  std::string path_;
  int major_ = 0, minor_ = 0;
};

/// One array in a device's memory (a PJRT_Buffer), freed with the object.
class PjrtBuffer {
 public:
  PjrtBuffer(std::shared_ptr<const PjrtPlugin> plugin, PJRT_Buffer* buffer, ops::TensorType type);
  ~PjrtBuffer();
  PjrtBuffer(const PjrtBuffer&) = delete;
  PjrtBuffer& operator=(const PjrtBuffer&) = delete;

  PJRT_Buffer* get() const { return buffer_; }
  const ops::TensorType& type() const { return type_; }
  size_t nbytes() const { return type_.nbytes(); }
  /// True once the buffer was donated to an execution (PJRT deleted its
  /// memory; the handle must not be read again).
  bool is_deleted() const;

 private:
  std::shared_ptr<const PjrtPlugin> plugin_;
  PJRT_Buffer* buffer_ = nullptr;
  ops::TensorType type_;
};

/// A compiled program loaded on the client's devices.
class PjrtExecutable {
 public:
  PjrtExecutable(std::shared_ptr<const PjrtPlugin> plugin, PJRT_LoadedExecutable* exe,
                 std::vector<ops::TensorType> output_types);
  ~PjrtExecutable();
  PjrtExecutable(const PjrtExecutable&) = delete;
  PjrtExecutable& operator=(const PjrtExecutable&) = delete;

  /// Runs on `device` (PjrtClient::device index) with one buffer per
  /// program argument, in order, and waits for it. An argument the program
  /// aliases to an output (tf.aliasing_output) is donated unless its index
  /// is in `keep` (PJRT's non_donatable_input_indices): a donated
  /// argument's buffer is deleted by PJRT and its memory becomes the output.
  /// Throws loom::Error with PJRT's message (e.g. a shape mismatch).
  std::vector<std::unique_ptr<PjrtBuffer>> execute(const std::vector<PJRT_Buffer*>& args,
                                                   PJRT_Device* device,
                                                   const std::vector<int64_t>& keep = {}) const;
  /// PJRT_Executable_Serialize's bytes (the plugin's format; loadable by
  /// PjrtClient::deserialize of the same plugin build).
  std::string serialize() const;
  /// XLA's memory plan of the executable (PJRT_Executable_GetCompiledMemoryStats),
  /// bytes of device memory; all zero when the plugin does not report it.
  struct CompiledMemory {
    int64_t argument_bytes = 0, output_bytes = 0, alias_bytes = 0, temp_bytes = 0, code_bytes = 0;
  };
  CompiledMemory compiled_memory() const;
  /// The program's results (from PJRT_Executable_OutputElementTypes /
  /// OutputDimensions), in order.
  const std::vector<ops::TensorType>& output_types() const { return output_types_; }
  /// Gives up ownership of the PJRT_LoadedExecutable (this object then
  /// destroys nothing).
  PJRT_LoadedExecutable* release() {
    PJRT_LoadedExecutable* e = exe_;
    exe_ = nullptr;
    return e;
  }

 private:
  std::shared_ptr<const PjrtPlugin> plugin_;
  PJRT_LoadedExecutable* exe_ = nullptr;
  std::vector<ops::TensorType> output_types_;
};

/// A PJRT client: the plugin's devices, compiler and memory.
class PjrtClient {
 public:
  /// PJRT_Client_Create with no options; throws loom::Error with PJRT's message.
  explicit PjrtClient(std::shared_ptr<const PjrtPlugin> plugin);
  ~PjrtClient();
  PjrtClient(const PjrtClient&) = delete;
  PjrtClient& operator=(const PjrtClient&) = delete;

  const PjrtPlugin& plugin() const { return *plugin_; }
  /// "cpu", "cuda", "tpu", ... (PJRT_Client_PlatformName) and its version text.
  const std::string& platform_name() const { return platform_name_; }
  const std::string& platform_version() const { return platform_version_; }
  /// The addressable devices' kind (PJRT_DeviceDescription_Kind: "cpu",
  /// "NVIDIA H100 80GB HBM3"), distinct kinds joined by ", "; "unknown"
  /// when the plugin's table lacks the two entries it takes.
  const std::string& device_kind() const { return device_kind_; }
  /// The addressable devices, in the client's order (lazy:xla:<index>).
  int device_count() const { return static_cast<int>(devices_.size()); }
  /// Device `index`; throws loom::Error when out of range.
  PJRT_Device* device(int index) const;

  /// Copies `type.nbytes()` bytes of row-major host data into a new buffer
  /// on device `index`; returns once the host bytes were consumed.
  std::unique_ptr<PjrtBuffer> from_host(const void* host, const ops::TensorType& type,
                                        int device) const;
  /// Copies `src` into `host` (`src.nbytes()` bytes, row-major) and waits.
  void to_host(const PjrtBuffer& src, void* host) const;

  /// The serialized xla.CompileOptionsProto compile() uses:
  /// pjrt_compile_options(xnnpack_off()).
  const std::string& compile_options() const { return compile_options_; }
  /// True when this client compiles with XNNPACK off: the platform is "cpu"
  /// and XLA_FLAGS does not name xla_cpu_use_xnnpack itself (the user's
  /// explicit choice wins). XLA:CPU's XNNPACK matmuls reuse a packed
  /// argument while its address is unchanged, which donation breaks
  /// (docs/backends.md, "Donation").
  bool xnnpack_off() const { return xnnpack_off_; }

  /// Compiles StableHLO MLIR text (program format "mlir") for one replica
  /// and one partition, runnable on any addressable device, with
  /// compile_options() (or `options`, serialized CompileOptionsProto bytes).
  /// Throws loom::Error "[xla] PJRT_Client_Compile: <XLA's diagnostic>".
  std::unique_ptr<PjrtExecutable> compile(const std::string& mlir) const;
  std::unique_ptr<PjrtExecutable> compile(const std::string& mlir,
                                          const std::string& options) const;
  /// Loads bytes from PjrtExecutable::serialize (the on-disk compile cache);
  /// throws loom::Error with PJRT's message for bytes it cannot load.
  std::unique_ptr<PjrtExecutable> deserialize(const std::string& bytes) const;

 private:
  std::vector<ops::TensorType> output_types(PJRT_LoadedExecutable* exe) const;
  std::shared_ptr<const PjrtPlugin> plugin_;
  PJRT_Client* client_ = nullptr;
  std::vector<PJRT_Device*> devices_;
  std::string platform_name_, platform_version_, device_kind_;
  bool xnnpack_off_ = false;
  std::string compile_options_;
};

/// The serialized xla.CompileOptionsProto loom compiles with:
/// executable_build_options (field 3) = {num_replicas (4): 1,
/// num_partitions (5): 1} and compile_portable_executable (4) = true (the
/// executable runs on any addressable device); with `xnnpack_off`, also
/// env_option_overrides (7) = {"xla_cpu_use_xnnpack": false} (XLA:CPU's
/// DebugOptions flag; only the CPU plugin knows it). Empty options abort the
/// CPU plugin.
std::string pjrt_compile_options(bool xnnpack_off);

}  // namespace loom::backends::xla
