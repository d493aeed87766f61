// Execute (on the executor thread): gather the input buffers, run the
// executable (which binds its memory plan and launches on the backend's
// stream), then rebind the results.
#include <chrono>

#include "lazy/graph_executor.h"
#include "loom/error.h"
#include "loom/metrics.h"

namespace loom::lazy {

void execute(Job& job) {
  auto t0 = std::chrono::steady_clock::now();
  try {
    std::vector<BufferPtr> inputs;
    Collected& c = job.collected;
    for (size_t i = 0; i < c.input_nodes.size(); ++i) {
      const TraceNodePtr& n = c.input_nodes[i];
      // An earlier step failed to produce this input: jobs run in order, so
      // its future is settled; get() re-raises that step's own error.
      if (!n->data && n->ready.valid()) n->ready.get();
      LOOM_CHECK(n->data != nullptr,
                 "[lazy] an input of this step was not computed because an "
                 "earlier step failed");
      // The step before ran and dropped its holds (it clears them before its
      // waiters wake): an input only this job holds now is free to donate.
      if (i < c.donatable_if_released.size() && c.donatable_if_released[i] && n.use_count() == 1 &&
          n->data.use_count() == 1)
        c.donatable[i] = true;
      inputs.push_back(n->data);
    }
    for (TraceNodePtr& n : job.collected.input_nodes) n.reset();  // drop our extra holds
    std::vector<BufferPtr> outputs =
        job.executable->run(std::move(inputs), job.collected.donatable);
    rebind_outputs(job, std::move(outputs));
    metrics::add_time("ExecuteTime", std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         std::chrono::steady_clock::now() - t0)
                                         .count());
    metrics::add_counter("ExecuteCount");
    // Drop this job's holds on the nodes before the waiters wake: a step
    // traced right after (while this thread may not have run again yet)
    // must see its inputs held by nobody else, or their donation is lost.
    job.collected.output_nodes.clear();
    job.collected.input_nodes.clear();
    job.done.set_value();
  } catch (...) {
    for (auto& n : job.collected.output_nodes) n->operands.clear();
    job.done.set_exception(std::current_exception());
  }
}

}  // namespace loom::lazy
