// start_ranks (launch.h). The flags compared are those given on the command
// line or in --config (rank-independent by construction); derived values
// such as the default logging_dir (with the host name) are left out.
#include "launch.h"

#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <optional>

#include "core/parse_number.h"
#include "loom/dist.h"

namespace loom::cli {
namespace {

// A flag's value as the ranks compare it: a decimal number by its value
// (shortest round-trip text, so "0.001", "1e-3" and "1.0e-03" agree; "8" and
// "8.0" too), true/false in any case as one spelling, anything else as written.
std::string launch_flag_value(const std::string& value) {
  std::string lower;
  for (char c : value) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "true" || lower == "false") return lower;
  std::optional<double> v = parse_decimal_double(value);
  if (!v || !std::isfinite(*v)) return value;
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), *v);
  return ec == std::errc() ? std::string(buf, end) : value;
}

}  // namespace

void start_ranks(const JobCommand& cmd, const TrainingArguments& args) {
  dist::ProcessGroup& pg = dist::init_process_group(args.ddp_backend.value_or("auto"));
  pg.set_timeout(std::chrono::seconds(args.ddp_timeout));
  dist::graph_process_group().set_timeout(std::chrono::seconds(args.ddp_timeout));
  if (pg.world_size() == 1) return;
  std::vector<std::string> flags;
  for (const auto& [name, value] : cmd.given)
    flags.push_back("--" + name + " " + launch_flag_value(value));
  dist::check_same_on_all_ranks("arguments", flags);
}

}  // namespace loom::cli
