// A test seam of the job's groups: swap graph_process_group() for a group a
// test made (a fake that records when collectives start and are waited
// for, relative to kernels). Not for programs: the real group is made by
// init_process_group.
#pragma once

#include <memory>

#include "loom/dist.h"

namespace loom::dist {

/// Makes `group` what graph_process_group() returns (nullptr: back to the
/// default) and returns the group it replaces. Call only while no
/// executable is running.
std::unique_ptr<ProcessGroup> replace_graph_process_group_for_testing(
    std::unique_ptr<ProcessGroup> group);

}  // namespace loom::dist
