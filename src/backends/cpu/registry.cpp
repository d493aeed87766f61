// Which ops have optimized cpu kernels. Add an entry when a family file
// gains a kernel.
#include "backends/cpu/kernels.h"

namespace loom::backends::cpu {

Kernel optimized_kernel(ops::OpKind op) {
  switch (op) {
    default: return nullptr;
  }
}

}  // namespace loom::backends::cpu
