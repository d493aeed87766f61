// PjrtBuffer and PjrtExecutable (pjrt_client.h): buffer lifetime, Execute
// with donation control, Serialize.
#include "backends/xla/pjrt_c.h"
#include "backends/xla/pjrt_client.h"
#include "loom/error.h"

namespace loom::backends::xla {

PjrtBuffer::PjrtBuffer(std::shared_ptr<const PjrtPlugin> plugin, PJRT_Buffer* buffer,
                       ops::TensorType type)
    : plugin_(std::move(plugin)), buffer_(buffer), type_(std::move(type)) {}

PjrtBuffer::~PjrtBuffer() {
  PJRT_Buffer_Destroy_Args d{};
  d.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE;
  d.buffer = buffer_;
  PJRT_Error* e = plugin_->api()->PJRT_Buffer_Destroy(&d);
  try {
    plugin_->check(e, "PJRT_Buffer_Destroy");
  } catch (const Error&) {  // a destructor cannot report it
  }
}

bool PjrtBuffer::is_deleted() const {
  PJRT_Buffer_IsDeleted_Args a{};
  a.struct_size = PJRT_Buffer_IsDeleted_Args_STRUCT_SIZE;
  a.buffer = buffer_;
  plugin_->check(plugin_->api()->PJRT_Buffer_IsDeleted(&a), "PJRT_Buffer_IsDeleted");
  return a.is_deleted;
}

PjrtExecutable::PjrtExecutable(std::shared_ptr<const PjrtPlugin> plugin, PJRT_LoadedExecutable* exe,
                               std::vector<ops::TensorType> output_types)
    : plugin_(std::move(plugin)), exe_(exe), output_types_(std::move(output_types)) {}

PjrtExecutable::~PjrtExecutable() {
  if (exe_ == nullptr) return;
  PJRT_LoadedExecutable_Destroy_Args d{};
  d.struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE;
  d.executable = exe_;
  PJRT_Error* e = plugin_->api()->PJRT_LoadedExecutable_Destroy(&d);
  try {
    plugin_->check(e, "PJRT_LoadedExecutable_Destroy");
  } catch (const Error&) {  // a destructor cannot report it
  }
}

std::vector<std::unique_ptr<PjrtBuffer>> PjrtExecutable::execute(
    const std::vector<PJRT_Buffer*>& args, PJRT_Device* device,
    const std::vector<int64_t>& keep) const {
  PJRT_ExecuteOptions options{};
  options.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE;
  options.non_donatable_input_indices = keep.data();
  options.num_non_donatable_input_indices = keep.size();
  std::vector<PJRT_Buffer*> outputs(output_types_.size(), nullptr);
  PJRT_Buffer* const* arg_list = args.data();
  PJRT_Buffer** out_list = outputs.data();
  PJRT_Event* done = nullptr;
  PJRT_LoadedExecutable_Execute_Args a{};
  a.struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE;
  a.executable = exe_;
  a.options = &options;
  a.argument_lists = &arg_list;
  a.num_devices = 1;
  a.num_args = args.size();
  a.output_lists = &out_list;
  a.device_complete_events = &done;
  a.execute_device = device;
  plugin_->check(plugin_->api()->PJRT_LoadedExecutable_Execute(&a),
                 "PJRT_LoadedExecutable_Execute");
  std::vector<std::unique_ptr<PjrtBuffer>> result;
  result.reserve(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i)
    result.push_back(std::make_unique<PjrtBuffer>(plugin_, outputs[i], output_types_[i]));
  plugin_->await(done, "PJRT_LoadedExecutable_Execute");
  return result;
}

std::string PjrtExecutable::serialize() const {
  const PJRT_Api* api = plugin_->api();
  std::string bytes;
  PJRT_Error* e = plugin_->with_executable(exe_, [&](PJRT_Executable* exe) {
    PJRT_Executable_Serialize_Args s{};
    s.struct_size = PJRT_Executable_Serialize_Args_STRUCT_SIZE;
    s.executable = exe;
    PJRT_Error* err = api->PJRT_Executable_Serialize(&s);
    if (err == nullptr) {
      bytes.assign(s.serialized_bytes, s.serialized_bytes_size);
      s.serialized_executable_deleter(s.serialized_executable);
    }
    return err;
  });
  plugin_->check(e, "PJRT_Executable_Serialize");
  return bytes;
}

PjrtExecutable::CompiledMemory PjrtExecutable::compiled_memory() const {
  CompiledMemory m;
  const PJRT_Api* api = plugin_->api();
  if (api->struct_size < PJRT_STRUCT_SIZE(PJRT_Api, PJRT_Executable_GetCompiledMemoryStats) ||
      api->PJRT_Executable_GetCompiledMemoryStats == nullptr)
    return m;
  PJRT_Executable_GetCompiledMemoryStats_Args a{};
  a.struct_size = PJRT_Executable_GetCompiledMemoryStats_Args_STRUCT_SIZE;
  PJRT_Error* e = plugin_->with_executable(exe_, [&](PJRT_Executable* exe) {
    a.executable = exe;
    return api->PJRT_Executable_GetCompiledMemoryStats(&a);
  });
  if (e != nullptr) {  // UNIMPLEMENTED on some plugins: report nothing
    PJRT_Error_Destroy_Args x{};
    x.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE;
    x.error = e;
    api->PJRT_Error_Destroy(&x);
    return m;
  }
  m.argument_bytes = a.argument_size_in_bytes;
  m.output_bytes = a.output_size_in_bytes;
  m.alias_bytes = a.alias_size_in_bytes;
  m.temp_bytes = a.temp_size_in_bytes;
  m.code_bytes = a.generated_code_size_in_bytes;
  return m;
}

}  // namespace loom::backends::xla
