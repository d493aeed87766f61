// The xla backend in a build without the PJRT C API header
// (LOOM_WITH_PJRT=0: CMake found no pjrt_c_api.h, so src/backends/xla/
// {pjrt,xla}_*.cpp are not compiled): the registry still lists "xla", and
// it reports why it cannot run. Empty in a build with the header.
#if !LOOM_WITH_PJRT

#include "backends/executable.h"
#include "backends/xla/xla_runtime.h"
#include "loom/error.h"

namespace loom::backends {
namespace {

const char kNoPjrtHeader[] =
    "[xla] this loom was built without the PJRT C API header (pjrt_c_api.h): run "
    "scripts/setup.sh (it pip-installs xla-cpu-pjrt into .venv/) and reconfigure the build";

class UnavailableXlaBackend final : public Backend {
 public:
  std::string_view name() const override { return "xla"; }
  std::string unavailable_reason() const override { return kNoPjrtHeader; }
  Capabilities capabilities() const override {  // runs nothing
    Capabilities c;
    c.fuse_elementwise = false;
    c.plans_itself = true;
    return c;
  }
  bool host_visible() const override { return false; }
  Stream& stream() const override { return stream_; }
  std::shared_ptr<Executable> compile(std::shared_ptr<const compiler::Program>) const override {
    fail(kNoPjrtHeader);
  }

 private:
  mutable InlineStream stream_;
};

}  // namespace

const Backend& xla_backend() {
  static const UnavailableXlaBackend backend;
  return backend;
}

}  // namespace loom::backends

namespace loom::backends::xla {

std::string unavailable_xla_reason(bool) { return kNoPjrtHeader; }
const PjrtClient& xla_client() { fail(kNoPjrtHeader); }
XlaInfo xla_info() { return {}; }
std::vector<HostArray> run_mlir(const std::string&, const std::vector<HostArray>&, int) {
  fail(kNoPjrtHeader);
}

}  // namespace loom::backends::xla

#endif  // !LOOM_WITH_PJRT
