// The one-rank ProcessGroup ("single"): every collective is the identity
// (the sum, mean or max over one rank is the value itself). It is what
// default_process_group() gives before init_process_group(), so code written
// for N ranks runs unchanged on one. Depends on nothing but core.
#pragma once

#include <memory>

#include "loom/dist.h"

namespace loom::dist {

std::unique_ptr<ProcessGroup> make_single_process_group();

}  // namespace loom::dist
