// libFuzzer harness: the safetensors reader (io/safetensors_format.h). The
// input is a whole file image: 8-byte little-endian header length, JSON
// header, tensor data. parse_file() must return a validated header or throw
// loom::Error; what it returns must describe tensors that lie inside the file.
#include <cstdlib>
#include <span>

#include "fuzz_util.h"
#include "io/safetensors_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> file(reinterpret_cast<const std::byte*>(data), size);
  loom::fuzz::run_guarded("safetensors", [&] {
    loom::safetensors::detail::Header header =
        loom::safetensors::detail::parse_file(file, "<fuzz>");
    // Accepted files: every tensor's bytes lie inside the data section.
    const size_t data_size = size - 8 - header.header_size;
    for (const loom::safetensors::TensorInfo& t : header.tensors) {
      if (t.offset > data_size || t.nbytes > data_size - t.offset) std::abort();
    }
  });
  return 0;
}
