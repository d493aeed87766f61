// loom._core.lazy: the lazy device's controls and metrics, with
// PyTorch/XLA's names (torch_xla's xm.mark_step / wait_device_ops and
// torch_xla.debug.metrics: metrics_report, counter_names, counter_value,
// metric_names, metric_data, clear_all). Everything that compiles or runs
// a graph releases the GIL, so other Python threads run meanwhile.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "loom/lazy.h"
#include "loom/metrics.h"

namespace nb = nanobind;

namespace loom::python {

void bind_lazy(nb::module_& m) {
  nb::module_ lazy = m.def_submodule("lazy", "The lazy device (PyTorch/XLA's xm and metrics).");
  using release = nb::call_guard<nb::gil_scoped_release>;
  lazy.def("mark_step", &lazy::mark_step, release(),
           "Cuts the pending graph of every live lazy tensor, compiles it (or takes it from the "
           "compile cache) and launches it; counts MarkStep. The GIL is released meanwhile.");
  lazy.def("wait_device_ops", &lazy::wait, release(),
           "Blocks until every launched executable has finished.");
  lazy.def("sync", &lazy::sync, nb::arg("tensors"), release(),
           "Syncs just `tensors` (and what they depend on).");
  lazy.def("pending_nodes", &lazy::pending_nodes,
           "IR nodes traced since the last sync (the graph-size guard's count).");
  lazy.def(
      "check_device", [](const std::string& d) { lazy::check_device(Device(d)); },
      nb::arg("device"),
      "Raises LoomError unless `device` can be used (its backend registered, its index "
      "there).");
  lazy.def("metrics_report", &metrics::report, release(),
           "Every metric and counter as torch_xla.debug.metrics.metrics_report() prints them, "
           "then loom's recompile causes.");
  lazy.def("metrics_json", &metrics::report_json,
           "The metrics as JSON text (lazy_metrics.json's format).");
  lazy.def("counter_value", &metrics::counter, nb::arg("name"),
           "A counter's value (0 if never counted): MarkStep, CachedCompile, UncachedCompile, ...");
  lazy.def(
      "metric_data",
      [](const std::string& name) {
        return std::make_tuple(metrics::timer_count(name), metrics::timer_total_ns(name),
                               metrics::timer_samples(name));
      },
      nb::arg("name"),
      "(total samples, accumulator, the last samples) of a metric: CompileTime, ExecuteTime "
      "(nanoseconds), TensorsGraphSize (instructions), ...");
  lazy.def("recompile_causes", &metrics::recompile_causes,
           "Why each uncached compile after the first happened, oldest first.");
  lazy.def("clear_all", &metrics::reset, "Clears every metric and counter.");
  lazy.def("clear_compile_cache", &lazy::clear_compile_cache,
           "Empties the in-memory compile cache.");
}

}  // namespace loom::python
