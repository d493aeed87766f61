// loom::safetensors::File, the reader of include/loom/safetensors.h: a
// MappedFile plus its validated header and lookup by name. Validation lives
// in safetensors_header.cpp, the writer in safetensors_save.cpp.
#include <functional>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "core/mapped_file.h"
#include "io/safetensors_format.h"
#include "loom/error.h"
#include "loom/safetensors.h"

namespace loom::safetensors {

namespace {

// Lets the index be searched with a string_view without building a string.
struct NameHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

}  // namespace

struct File::Impl {
  MappedFile map;
  detail::Header header;
  // name -> position in header.tensors
  std::unordered_map<std::string, size_t, NameHash, std::equal_to<>> index;
};

File::File(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
File::File(File&&) noexcept = default;
File& File::operator=(File&&) noexcept = default;
File::~File() = default;

File File::open(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  impl->map = MappedFile::open(path, "safetensors");
  impl->header = detail::parse_file(impl->map.bytes(), path);
  const auto& tensors = impl->header.tensors;
  for (size_t i = 0; i < tensors.size(); ++i) impl->index.emplace(tensors[i].name, i);
  return File(std::move(impl));
}

const std::string& File::path() const { return impl_->map.path(); }

const std::vector<TensorInfo>& File::tensors() const { return impl_->header.tensors; }

const TensorInfo* File::find(std::string_view name) const {
  auto it = impl_->index.find(name);
  return it == impl_->index.end() ? nullptr : &impl_->header.tensors[it->second];
}

const TensorInfo& File::at(std::string_view name) const {
  const TensorInfo* info = find(name);
  LOOM_CHECK(info != nullptr, "[safetensors] ", path(), ": no tensor named '", name, "'");
  return *info;
}

std::span<const std::byte> File::data(const TensorInfo& info) const {
  const size_t data_size = impl_->map.size() - 8 - impl_->header.header_size;
  LOOM_CHECK(info.offset <= data_size && info.nbytes <= data_size - info.offset, "[safetensors] ",
             path(), ": tensor '", info.name, "' bytes [", info.offset, ",",
             info.offset + info.nbytes, ") are outside this file's data buffer (", data_size,
             " bytes)");
  if (info.nbytes == 0) return {};
  return impl_->map.bytes().subspan(8 + impl_->header.header_size + info.offset, info.nbytes);
}

const std::map<std::string, std::string>& File::metadata() const { return impl_->header.metadata; }

size_t File::header_size() const { return impl_->header.header_size; }

size_t File::file_size() const { return impl_->map.size(); }

}  // namespace loom::safetensors
