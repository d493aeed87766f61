// Starting the ranks of a `loom train` / `loom evaluate` job: the
// ProcessGroup from --ddp_backend (mpi under mpirun by default) with
// --ddp_timeout, and the start-up check that every rank was given the same
// flags. Assumes TrainingArguments were validated.
#pragma once

#include <string>

#include "job_args.h"

namespace loom::cli {

/// init_process_group(--ddp_backend or "auto"), its timeout from
/// --ddp_timeout, then (with more than one rank) check_same_on_all_ranks of
/// the given flags, numbers compared by value ("0.001" == "1e-3"): throws loom::Error "[dist]
/// arguments differ between ranks: rank 1 has '--learning_rate 0.1' at item 3, rank 0 has
/// '--learning_rate 0.2'".
void start_ranks(const JobCommand& cmd, const TrainingArguments& args);

}  // namespace loom::cli
