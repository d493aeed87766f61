// host_name(): this machine's name, for file and directory names that say
// where a run happened (TensorBoard's events.out.tfevents.<time>.<host>...,
// transformers' default logging_dir runs/<date>_<host>). POSIX gethostname.
#pragma once

#include <string>

namespace loom {

/// gethostname(), or "localhost" when it fails or is empty.
std::string host_name();

}  // namespace loom
