// A fake PJRT plugin for the version check's tests: GetPjrtApi returns an
// API table with no functions and the version named by the compile
// definitions FAKE_PJRT_MAJOR / FAKE_PJRT_MINOR (CMake builds it twice: a
// different major, and an API table too short for loom; and a third time with
// loom's own version and full size, every function pointer null). Never
// initialized: loom refuses it before calling anything.
#include <pjrt_c_api.h>

namespace {
PJRT_Api make_fake_api() {
  PJRT_Api api{};
  api.struct_size = FAKE_PJRT_STRUCT_SIZE;
  api.pjrt_api_version.struct_size = PJRT_Api_Version_STRUCT_SIZE;
  api.pjrt_api_version.major_version = FAKE_PJRT_MAJOR;
  api.pjrt_api_version.minor_version = FAKE_PJRT_MINOR;
  return api;
}
const PJRT_Api kFakeApi = make_fake_api();
}  // namespace

extern "C" __attribute__((visibility("default"))) const PJRT_Api* GetPjrtApi() { return &kFakeApi; }
