// The memory of a built job's model state per rank (loom/job.h): parameters,
// gradients and optimizer state in the TrainingArguments' --fsdp mode
// (train/fsdp_options.h), and the check against the memory this process may
// still take (core/memory_info.h: the cgroup limit included) that `loom
// train` runs before the Trainer allocates the optimizer state.
#include <optional>

#include "core/memory_info.h"
#include "loom/device_traits.h"
#include "loom/error.h"
#include "loom/job.h"
#include "train/ddp.h"
#include "train/fsdp_options.h"

namespace loom {
namespace {

const char* mode_text(train::FsdpMode mode) {
  return mode == train::FsdpMode::off ? "ddp" : train::fsdp_mode_name(mode);
}

JobMemory memory_in_mode(const Job& job, const TrainingArguments& args, train::FsdpMode mode) {
  const int64_t trainable = job.model->num_parameters(true);
  const int64_t all = job.model->num_parameters();
  // Off the lazy device, full_shard's gathers are copies kept whole.
  if (mode == train::FsdpMode::full_shard && !args.device.is_lazy())
    mode = train::FsdpMode::shard_grad_op;
  const train::FsdpMemory m = train::fsdp_memory_per_rank(
      mode, train::ddp_world_size(), static_cast<double>(trainable),
      static_cast<double>(all - trainable), args.optim == "sgd" ? 0 : 2);
  JobMemory out;
  out.params = m.params;
  out.params_at_rest = m.params_at_rest;
  out.grads = m.grads;
  out.optimizer = m.optimizer;
  return out;
}

}  // namespace

JobMemory job_memory_per_rank(const Job& job, const TrainingArguments& args) {
  const train::FsdpMode mode = train::parse_fsdp_mode(args.fsdp);
  JobMemory m = memory_in_mode(job, args, mode);
  m.mode = mode_text(mode);
  return m;
}

void check_job_memory(const Job& job, const TrainingArguments& args) {
  if (lazy::device_traits(args.device).plans_memory) return;  // the state is the backend's
  const std::optional<AvailableMemory> room = available_memory();
  if (!room) return;
  const train::FsdpMode mode = train::parse_fsdp_mode(args.fsdp);
  const double held = 4.0 * static_cast<double>(job.model->num_parameters());
  const double can = static_cast<double>(room->bytes) + held;
  const double need = memory_in_mode(job, args, mode).total();
  if (need <= can) return;
  std::string advice = "fewer or smaller layers (--config_overrides), or more ranks";
  if (mode != train::FsdpMode::full_shard && train::ddp_world_size() > 1) {
    const double sharded = memory_in_mode(job, args, train::FsdpMode::full_shard).total();
    if (sharded <= can) advice = "--fsdp full_shard needs " + format_bytes(sharded) + " per rank";
  }
  fail("[loom train] memory per rank (", mode_text(mode), "): the model's state needs ",
       format_bytes(need), ", but this rank has ", format_bytes(can), " (",
       format_bytes(static_cast<double>(room->bytes)), " available, ", room->source,
       ", and the built model's ", format_bytes(held), "); ", advice);
}

}  // namespace loom
