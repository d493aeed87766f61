// check_parameters_fit (loom/model_config.h): a config's parameter count
// against the memory available, before anything is allocated.
#include "loom/model_config.h"

#include <optional>
#include <sstream>

#include "core/memory_info.h"
#include "loom/error.h"

namespace loom {
namespace {

std::string parameter_count_text(double n) {
  std::ostringstream s;
  s.precision(3);
  s << n;
  return s.str();
}

}  // namespace

void check_parameters_fit(const std::string& prefix, double parameters, const std::string& sizes,
                          double copies, const std::string& why) {
  std::optional<AvailableMemory> room = available_memory();
  if (!room) return;
  const double need = parameters * 4 * copies;
  if (need <= static_cast<double>(room->bytes)) return;
  std::string how =
      copies == 1 ? "as f32" : "as f32 x " + parameter_count_text(copies) + " (" + why + ")";
  fail(prefix, " ", sizes, " make ", parameter_count_text(parameters),
       " parameters: ", format_bytes(need), " ", how, ", more than the ",
       format_bytes(static_cast<double>(room->bytes)), " of memory available (", room->source,
       "); lower them in config.json or --config_overrides");
}

}  // namespace loom
