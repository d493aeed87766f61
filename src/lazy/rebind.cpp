// Rebind: each executed output node becomes device data in place, so every
// tensor sharing it (and every later graph using it) sees the result; a
// tensor reading its value waits for it first.
#include "lazy/graph_executor.h"

#include <chrono>

#include "lazy/host_time.h"

namespace loom::lazy {

void rebind_outputs(Job& job, std::vector<BufferPtr> outputs) {
  for (size_t i = 0; i < job.collected.output_nodes.size(); ++i) {
    TraceNode& n = *job.collected.output_nodes[i];
    n.data = std::move(outputs[i]);
    n.operands.clear();
  }
}

void refresh(TensorImpl& impl) {
  if (!impl.node) return;
  std::shared_future<void>& ready = impl.node->ready;
  if (ready.valid()) {
    if (ready.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      HostWait waiting;  // the host waits for the device: not HostTime
      ready.wait();
    }
    ready.get();  // rethrows executor errors
  }
  if (impl.node->data) impl.data = impl.node->data;
}

}  // namespace loom::lazy
