// PjrtClient (pjrt_client.h): PJRT_Client_Create, the addressable devices,
// BufferFromHostBuffer / ToHostBuffer, Compile and DeserializeAndLoad.
#include "backends/xla/pjrt_client.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backends/xla/pjrt_c.h"
#include "core/settings.h"
#include "loom/error.h"

namespace loom::backends::xla {
namespace {

PJRT_Buffer_Type pjrt_element_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return PJRT_Buffer_Type_F32;
    case DType::bf16:
      return PJRT_Buffer_Type_BF16;
    case DType::f16:
      return PJRT_Buffer_Type_F16;
    case DType::i32:
      return PJRT_Buffer_Type_S32;
    case DType::i64:
      return PJRT_Buffer_Type_S64;
    case DType::boolean:
      return PJRT_Buffer_Type_PRED;  // one byte per element, as loom's bool
  }
  fail("[xla] no PJRT element type for dtype ", dtype_name(dtype));
}

DType dtype_of_pjrt(PJRT_Buffer_Type type) {
  switch (type) {
    case PJRT_Buffer_Type_F32:
      return DType::f32;
    case PJRT_Buffer_Type_BF16:
      return DType::bf16;
    case PJRT_Buffer_Type_F16:
      return DType::f16;
    case PJRT_Buffer_Type_S32:
      return DType::i32;
    case PJRT_Buffer_Type_S64:
      return DType::i64;
    case PJRT_Buffer_Type_PRED:
      return DType::boolean;
    default:
      break;
  }
  fail("[xla] the program returns PJRT element type ", static_cast<int>(type),
       ", which loom has no dtype for (f32, bf16, f16, s32, s64, pred)");
}

}  // namespace

std::string pjrt_compile_options(bool xnnpack_off) {
  // xla.CompileOptionsProto (openxla/xla xla/pjrt/proto/compile_options.proto) in protobuf wire
  // format (tag byte = field << 3 | wire type):
  //   1a 04        executable_build_options (3), 4 bytes: ExecutableBuildOptionsProto {
  //     20 01        num_replicas (4) = 1
  //     28 01 }      num_partitions (5) = 1
  //   20 01        compile_portable_executable (4) = true: runs on any addressable device
  //                (PJRT_LoadedExecutable_Execute's execute_device), so one executable
  //                serves every lazy:xla:<index>.
  std::string options("\x1a\x04\x20\x01\x28\x01\x20\x01", 8);
  if (!xnnpack_off) return options;
  // env_option_overrides (7) is map<string, OptionOverrideProto>: one entry is a message
  // {key (1): string, value (2): OptionOverrideProto}, and OptionOverrideProto's
  // bool_field is 2 (in a oneof: false is written, not omitted). The client applies it to
  // the build options' DebugOptions (CompileOptions::ApplyAllOptionOverrides).
  //   3a 19        env_option_overrides (7), 25 bytes: {
  //     0a 13 ...    key (1) = "xla_cpu_use_xnnpack" (19 bytes)
  //     12 02        value (2), 2 bytes: OptionOverrideProto {
  //       10 00 }}     bool_field (2) = false
  static const char kKey[] = "xla_cpu_use_xnnpack";
  options += std::string("\x3a\x19\x0a\x13", 4);
  options += std::string(kKey, sizeof(kKey) - 1);
  options += std::string("\x12\x02\x10\x00", 4);
  return options;
}

namespace {

// XLA_FLAGS (XLA's own flag string, read by the plugin) sets the XNNPACK flag itself.
bool xla_flags_name_xnnpack() {
  const char* flags = settings::environment("XLA_FLAGS");
  return flags != nullptr && std::strstr(flags, "xla_cpu_use_xnnpack") != nullptr;
}

// The kind of `device`, or "unknown" when the plugin cannot say (the two
// entries are not among those every plugin must have: pjrt_plugin.cpp).
std::string pjrt_device_kind(const PjrtPlugin& plugin, PJRT_Device* device) {
  const PJRT_Api* api = plugin.api();
  if (api->struct_size < PJRT_STRUCT_SIZE(PJRT_Api, PJRT_DeviceDescription_Kind) ||
      api->PJRT_Device_GetDescription == nullptr || api->PJRT_DeviceDescription_Kind == nullptr)
    return "unknown";
  PJRT_Device_GetDescription_Args g{};
  g.struct_size = PJRT_Device_GetDescription_Args_STRUCT_SIZE;
  g.device = device;
  plugin.check(api->PJRT_Device_GetDescription(&g), "PJRT_Device_GetDescription");
  PJRT_DeviceDescription_Kind_Args k{};
  k.struct_size = PJRT_DeviceDescription_Kind_Args_STRUCT_SIZE;
  k.device_description = g.device_description;
  plugin.check(api->PJRT_DeviceDescription_Kind(&k), "PJRT_DeviceDescription_Kind");
  return std::string(k.device_kind, k.device_kind_size);
}

}  // namespace

PjrtClient::PjrtClient(std::shared_ptr<const PjrtPlugin> plugin) : plugin_(std::move(plugin)) {
  const PJRT_Api* api = plugin_->api();
  PJRT_Client_Create_Args c{};
  c.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE;
  plugin_->check(api->PJRT_Client_Create(&c), "PJRT_Client_Create");
  client_ = c.client;

  PJRT_Client_PlatformName_Args n{};
  n.struct_size = PJRT_Client_PlatformName_Args_STRUCT_SIZE;
  n.client = client_;
  plugin_->check(api->PJRT_Client_PlatformName(&n), "PJRT_Client_PlatformName");
  platform_name_.assign(n.platform_name, n.platform_name_size);
  PJRT_Client_PlatformVersion_Args v{};
  v.struct_size = PJRT_Client_PlatformVersion_Args_STRUCT_SIZE;
  v.client = client_;
  plugin_->check(api->PJRT_Client_PlatformVersion(&v), "PJRT_Client_PlatformVersion");
  platform_version_.assign(v.platform_version, v.platform_version_size);
  xnnpack_off_ = platform_name_ == "cpu" && !xla_flags_name_xnnpack();
  compile_options_ = pjrt_compile_options(xnnpack_off_);

  PJRT_Client_AddressableDevices_Args d{};
  d.struct_size = PJRT_Client_AddressableDevices_Args_STRUCT_SIZE;
  d.client = client_;
  plugin_->check(api->PJRT_Client_AddressableDevices(&d), "PJRT_Client_AddressableDevices");
  devices_.assign(d.addressable_devices, d.addressable_devices + d.num_addressable_devices);
  LOOM_CHECK(!devices_.empty(), "[xla] plugin ", plugin_->path(), " has no addressable devices");
  std::vector<std::string> kinds;
  for (PJRT_Device* dev : devices_) {
    std::string kind = pjrt_device_kind(*plugin_, dev);
    if (std::find(kinds.begin(), kinds.end(), kind) != kinds.end()) continue;
    device_kind_ += (kinds.empty() ? "" : ", ") + kind;
    kinds.push_back(std::move(kind));
  }
}

PjrtClient::~PjrtClient() {
  PJRT_Client_Destroy_Args d{};
  d.struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE;
  d.client = client_;
  PJRT_Error* e = plugin_->api()->PJRT_Client_Destroy(&d);
  try {
    plugin_->check(e, "PJRT_Client_Destroy");
  } catch (const Error&) {  // nothing to do about it at teardown
  }
}

PJRT_Device* PjrtClient::device(int index) const {
  LOOM_CHECK(index >= 0 && index < device_count(), "[xla] device index ", index, ": the ",
             platform_name_, " plugin has ", device_count(), " addressable device(s)");
  return devices_[static_cast<size_t>(index)];
}

std::unique_ptr<PjrtBuffer> PjrtClient::from_host(const void* host, const ops::TensorType& type,
                                                  int device) const {
  PJRT_Client_BufferFromHostBuffer_Args a{};
  a.struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE;
  a.client = client_;
  a.data = host;
  a.type = pjrt_element_type(type.dtype);
  a.dims = type.shape.data();
  a.num_dims = type.shape.size();
  a.host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes;
  a.device = this->device(device);
  plugin_->check(plugin_->api()->PJRT_Client_BufferFromHostBuffer(&a),
                 "PJRT_Client_BufferFromHostBuffer");
  auto buffer = std::make_unique<PjrtBuffer>(plugin_, a.buffer, type);
  plugin_->await(a.done_with_host_buffer, "PJRT_Client_BufferFromHostBuffer");
  return buffer;
}

void PjrtClient::to_host(const PjrtBuffer& src, void* host) const {
  PJRT_Buffer_ToHostBuffer_Args a{};
  a.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE;
  a.src = src.get();
  a.dst = host;
  a.dst_size = src.nbytes();
  plugin_->check(plugin_->api()->PJRT_Buffer_ToHostBuffer(&a), "PJRT_Buffer_ToHostBuffer");
  plugin_->await(a.event, "PJRT_Buffer_ToHostBuffer");
}

// The executable's results as loom types (PJRT_Executable_OutputElementTypes
// and OutputDimensions).
std::vector<ops::TensorType> PjrtClient::output_types(PJRT_LoadedExecutable* loaded) const {
  const PJRT_Api* api = plugin_->api();
  std::vector<ops::TensorType> types;
  PJRT_Error* e = plugin_->with_executable(loaded, [&](PJRT_Executable* exe) {
    PJRT_Executable_OutputElementTypes_Args t{};
    t.struct_size = PJRT_Executable_OutputElementTypes_Args_STRUCT_SIZE;
    t.executable = exe;
    PJRT_Error* err = api->PJRT_Executable_OutputElementTypes(&t);
    PJRT_Executable_OutputDimensions_Args d{};
    d.struct_size = PJRT_Executable_OutputDimensions_Args_STRUCT_SIZE;
    d.executable = exe;
    if (err == nullptr) err = api->PJRT_Executable_OutputDimensions(&d);
    if (err != nullptr) return err;
    const int64_t* dims = d.dims;
    for (size_t i = 0; i < t.num_output_types && i < d.num_outputs; ++i) {
      ops::TensorType type;
      type.dtype = dtype_of_pjrt(t.output_types[i]);
      type.shape.assign(dims, dims + d.dim_sizes[i]);
      dims += d.dim_sizes[i];
      types.push_back(std::move(type));
    }
    return err;
  });
  plugin_->check(e, "PJRT_Executable_OutputElementTypes");
  return types;
}

std::unique_ptr<PjrtExecutable> PjrtClient::compile(const std::string& mlir) const {
  return compile(mlir, compile_options_);
}

std::unique_ptr<PjrtExecutable> PjrtClient::compile(const std::string& mlir,
                                                    const std::string& options) const {
  static const char kFormat[] = "mlir";
  PJRT_Program program{};
  program.struct_size = PJRT_Program_STRUCT_SIZE;
  program.code = const_cast<char*>(mlir.data());  // read only: "owned by the caller"
  program.code_size = mlir.size();
  program.format = kFormat;
  program.format_size = sizeof(kFormat) - 1;
  PJRT_Client_Compile_Args a{};
  a.struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE;
  a.client = client_;
  a.program = &program;
  a.compile_options = options.data();
  a.compile_options_size = options.size();
  plugin_->check(plugin_->api()->PJRT_Client_Compile(&a), "PJRT_Client_Compile");
  auto exe =
      std::make_unique<PjrtExecutable>(plugin_, a.executable, std::vector<ops::TensorType>{});
  return std::make_unique<PjrtExecutable>(plugin_, exe->release(), output_types(a.executable));
}

std::unique_ptr<PjrtExecutable> PjrtClient::deserialize(const std::string& bytes) const {
  PJRT_Executable_DeserializeAndLoad_Args a{};
  a.struct_size = PJRT_Executable_DeserializeAndLoad_Args_STRUCT_SIZE;
  a.client = client_;
  a.serialized_executable = bytes.data();
  a.serialized_executable_size = bytes.size();
  plugin_->check(plugin_->api()->PJRT_Executable_DeserializeAndLoad(&a),
                 "PJRT_Executable_DeserializeAndLoad");
  auto exe = std::make_unique<PjrtExecutable>(plugin_, a.loaded_executable,
                                              std::vector<ops::TensorType>{});
  return std::make_unique<PjrtExecutable>(plugin_, exe->release(),
                                          output_types(a.loaded_executable));
}

}  // namespace loom::backends::xla
