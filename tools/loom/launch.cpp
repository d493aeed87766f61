// start_ranks (launch.h). The flags compared are those given on the command
// line or in --config (rank-independent by construction); derived values
// such as the default logging_dir (with the host name) are left out.
#include "launch.h"

#include <chrono>

#include "loom/dist.h"

namespace loom::cli {

void start_ranks(const JobCommand& cmd, const TrainingArguments& args) {
  dist::ProcessGroup& pg = dist::init_process_group(args.ddp_backend.value_or("auto"));
  pg.set_timeout(std::chrono::seconds(args.ddp_timeout));
  dist::graph_process_group().set_timeout(std::chrono::seconds(args.ddp_timeout));
  if (pg.world_size() == 1) return;
  std::vector<std::string> flags;
  for (const auto& [name, value] : cmd.given) flags.push_back("--" + name + " " + value);
  dist::check_same_on_all_ranks("arguments", flags);
}

}  // namespace loom::cli
