// loom._core.Trainer: the C++ loom::Trainer (loom/trainer.h) driven from
// Python. The loop stays in C++ with the GIL released; Python runs only on
// events: one C++ callback (EventBridge) stands for the Python callbacks and
// calls a dispatch function with the GIL held, for the events that some
// Python callback overrides, passing TrainerControl's flags in and back. At
// every step end it also checks for signals (PyErr_CheckSignals), so Ctrl-C
// stops the loop at the step boundary, before any checkpoint of that step is
// written. A Python exception (from a callback, compute_metrics or a
// signal handler) is kept, unwinds the C++ loop as PendingPythonError, and
// is raised again, traceback and all, once the GIL is back.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/set.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <exception>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "bindings.h"
#include "data_handles.h"
#include "loom/error.h"
#include "loom/trainer.h"

namespace nb = nanobind;

namespace loom::python {
namespace {

// Unwinds the C++ loop after a Python exception was stored.
struct PendingPythonError : std::exception {
  const char* what() const noexcept override { return "Python exception in a Trainer event"; }
};

// Where a Python exception waits while the C++ loop unwinds. Used with the GIL held.
class PendingError {
 public:
  // Takes the exception of Python's error indicator (set by the caller).
  [[noreturn]] void take_and_unwind() {
    PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb && value) PyException_SetTraceback(value, tb);
    type_ = nb::steal(type);
    value_ = nb::steal(value);
    tb_ = nb::steal(tb);
    throw PendingPythonError();
  }
  [[noreturn]] void take_and_unwind(nb::python_error& e) {
    e.restore();
    take_and_unwind();
  }
  // Puts the stored exception back into Python and raises it (GIL held).
  [[noreturn]] void raise() {
    PyErr_Restore(type_.release().ptr(), value_.release().ptr(), tb_.release().ptr());
    throw nb::python_error();
  }

 private:
  nb::object type_, value_, tb_;
};

// The Python side, as Trainer events: dispatch(event, global_step, epoch,
// max_steps, flags, payload) -> flags, where flags are TrainerControl's
// (should_training_stop, should_epoch_stop, should_save, should_evaluate,
// should_log) and payload the logs / metrics dict, or None.
class EventBridge : public TrainerCallback {
 public:
  EventBridge(nb::object dispatch, const std::set<std::string>& events,
              std::shared_ptr<PendingError> pending)
      : dispatch_(std::move(dispatch)), events_(events), pending_(std::move(pending)) {}
  ~EventBridge() override {
    nb::gil_scoped_acquire gil;
    dispatch_.reset();
  }
  std::string name() const override { return "PythonCallbacks"; }
  // Called with the GIL, never while an event runs in another thread.
  void set_events(std::set<std::string> events) { events_ = std::move(events); }
  // The garbage collector's view (PyTrainer's tp_traverse / tp_clear).
  PyObject* dispatch() const { return dispatch_.ptr(); }
  void clear() {
    events_.clear();
    dispatch_.reset();
  }

  using TA = TrainingArguments;
  using TS = TrainerState;
  using TC = TrainerControl;
  void on_init_end(const TA&, const TS& s, TC& c) override { fire("on_init_end", s, c); }
  void on_train_begin(const TA&, const TS& s, TC& c) override { fire("on_train_begin", s, c); }
  void on_train_end(const TA&, const TS& s, TC& c) override { fire("on_train_end", s, c); }
  void on_epoch_begin(const TA&, const TS& s, TC& c) override { fire("on_epoch_begin", s, c); }
  void on_epoch_end(const TA&, const TS& s, TC& c) override { fire("on_epoch_end", s, c); }
  void on_step_begin(const TA&, const TS& s, TC& c) override { fire("on_step_begin", s, c); }
  void on_substep_end(const TA&, const TS& s, TC& c) override { fire("on_substep_end", s, c); }
  void on_pre_optimizer_step(const TA&, const TS& s, TC& c) override {
    fire("on_pre_optimizer_step", s, c);
  }
  void on_optimizer_step(const TA&, const TS& s, TC& c) override {
    fire("on_optimizer_step", s, c);
  }
  void on_save(const TA&, const TS& s, TC& c) override { fire("on_save", s, c); }
  void on_evaluate(const TA&, const TS& s, TC& c, const Logs& m) override {
    fire("on_evaluate", s, c, &m);
  }
  void on_predict(const TA&, const TS& s, TC& c, const Logs& m) override {
    fire("on_predict", s, c, &m);
  }
  void on_log(const TA&, const TS& s, TC& c, const Logs& logs) override {
    fire("on_log", s, c, &logs);
  }
  // Ctrl-C: Python's handler raises KeyboardInterrupt here, at the step boundary.
  void on_step_end(const TA&, const TS& s, TC& c) override {
    {
      nb::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) pending_->take_and_unwind();
    }
    fire("on_step_end", s, c);
  }

 private:
  void fire(const char* event, const TS& s, TC& c, const Logs* payload = nullptr) {
    if (!events_.count(event)) return;
    nb::gil_scoped_acquire gil;
    if (!dispatch_.is_valid()) return;  // cleared by the garbage collector
    try {
      nb::object data = nb::none();
      if (payload) {
        nb::dict d;
        for (const auto& [k, v] : *payload) d[k.c_str()] = v;
        data = d;
      }
      nb::tuple flags = nb::make_tuple(c.should_training_stop, c.should_epoch_stop, c.should_save,
                                       c.should_evaluate, c.should_log);
      nb::object out = dispatch_(event, s.global_step, s.epoch, s.max_steps, flags, data);
      auto f = nb::cast<nb::tuple>(out);
      c.should_training_stop = nb::cast<bool>(f[0]);
      c.should_epoch_stop = nb::cast<bool>(f[1]);
      c.should_save = nb::cast<bool>(f[2]);
      c.should_evaluate = nb::cast<bool>(f[3]);
      c.should_log = nb::cast<bool>(f[4]);
    } catch (nb::python_error& e) {
      pending_->take_and_unwind(e);
    }
  }

  nb::object dispatch_;
  std::set<std::string> events_;
  std::shared_ptr<PendingError> pending_;
};

// compute_metrics(predictions, label_ids) -> {name: number}, called with the GIL.
struct PyMetrics {
  nb::object fn;
  std::shared_ptr<PendingError> pending;
  ~PyMetrics() {
    nb::gil_scoped_acquire gil;
    fn.reset();
  }
};

nb::object host_array(const Tensor& t) {
  return t.defined() ? nb::cast(t).attr("numpy")() : nb::none();
}

ComputeMetrics wrap_metrics(std::shared_ptr<PyMetrics> py) {
  return [py](const EvalPrediction& p) -> Logs {
    nb::gil_scoped_acquire gil;
    Logs logs;
    if (!py->fn.is_valid()) return logs;  // cleared by the garbage collector
    try {
      nb::object out = py->fn(host_array(p.predictions), host_array(p.label_ids));
      LOOM_CHECK(nb::isinstance<nb::dict>(out),
                 "[compute_metrics] must return a dict of "
                 "name -> number, got ",
                 nb::inst_name(out.type()).c_str());
      for (auto [k, v] : nb::cast<nb::dict>(out)) {
        LOOM_CHECK(nb::isinstance<nb::str>(k), "[compute_metrics] a key is not a str");
        logs[nb::cast<std::string>(k)] = nb::cast<double>(nb::float_(v));
      }
    } catch (nb::python_error& e) {
      py->pending->take_and_unwind(e);
    }
    return logs;
  };
}

// Runs `f` with the GIL released; a Python exception stored meanwhile is raised again.
template <class F>
auto guarded(PendingError& pending, F&& f) {
  try {
    nb::gil_scoped_release release;
    return f();
  } catch (const PendingPythonError&) {
    pending.raise();
  }
}

// The Trainer with the pending-error slot its bridge and metrics share.
struct PyTrainer {
  std::shared_ptr<PendingError> pending;
  std::shared_ptr<EventBridge> bridge;  // null without a dispatch function
  std::shared_ptr<PyMetrics> metrics;   // null without compute_metrics
  std::unique_ptr<Trainer> trainer;
  template <class F>
  auto guarded(F&& f) {
    return python::guarded(*pending, std::forward<F>(f));
  }
};

std::shared_ptr<const data::Dataset> dataset_of(const std::optional<DatasetHandle>& h) {
  return h ? h->dataset : nullptr;
}

void init_trainer(PyTrainer* self, std::shared_ptr<PretrainedModel> model,
                  const std::string& args_json, std::optional<DatasetHandle> train,
                  std::optional<DatasetHandle> eval, std::optional<CollatorHandle> collator,
                  const std::string& tokenizer_dir, nb::object compute_metrics, nb::object dispatch,
                  std::set<std::string> events) {
  auto pending = std::make_shared<PendingError>();
  TrainingArguments args = TrainingArguments::from_json(args_json, "TrainingArguments");
  TrainerOptions options;
  if (collator) options.data_collator = collator->collator;
  options.tokenizer_dir = tokenizer_dir;
  std::shared_ptr<PyMetrics> metrics;
  if (!compute_metrics.is_none()) {
    metrics = std::make_shared<PyMetrics>(PyMetrics{compute_metrics, pending});
    options.compute_metrics = wrap_metrics(metrics);
  }
  std::shared_ptr<EventBridge> bridge;
  if (!dispatch.is_none()) {
    bridge = std::make_shared<EventBridge>(dispatch, events, pending);
    options.callbacks.push_back(bridge);
  }
  std::unique_ptr<Trainer> trainer = guarded(*pending, [&] {
    return std::make_unique<Trainer>(std::move(model), std::move(args), dataset_of(train),
                                     dataset_of(eval), std::move(options));
  });
  new (self) PyTrainer{pending, bridge, metrics, std::move(trainer)};
}

nb::dict to_dict(const Logs& logs) {
  nb::dict d;
  for (const auto& [k, v] : logs) d[k.c_str()] = v;
  return d;
}

Trainer& live(PyTrainer& t) {
  LOOM_CHECK(t.trainer != nullptr, "[Trainer] not constructed");
  return *t.trainer;
}

// The Python objects a Trainer holds (the dispatch function reaches the
// callbacks, which may reach the Trainer) are shown to the garbage
// collector, so such a cycle is collected (nanobind's documented way).
int trainer_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  PyTrainer* t = nb::inst_ptr<PyTrainer>(self);
  if (t->bridge && t->bridge->dispatch()) Py_VISIT(t->bridge->dispatch());
  if (t->metrics && t->metrics->fn.ptr()) Py_VISIT(t->metrics->fn.ptr());
  return 0;
}

int trainer_clear(PyObject* self) {
  PyTrainer* t = nb::inst_ptr<PyTrainer>(self);
  if (t->bridge) t->bridge->clear();
  if (t->metrics) t->metrics->fn.reset();
  return 0;
}

PyType_Slot trainer_slots[] = {{Py_tp_traverse, reinterpret_cast<void*>(trainer_traverse)},
                               {Py_tp_clear, reinterpret_cast<void*>(trainer_clear)},
                               {0, nullptr}};

void bind_trainer_class(nb::module_& m) {
  nb::class_<PyTrainer>(m, "Trainer", nb::type_slots(trainer_slots),
                        "loom::Trainer; python/loom/trainer.py wraps it.")
      .def("__init__", &init_trainer, nb::arg("model"), nb::arg("args_json"),
           nb::arg("train_dataset").none(), nb::arg("eval_dataset").none(),
           nb::arg("collator").none(), nb::arg("tokenizer_dir"), nb::arg("compute_metrics").none(),
           nb::arg("dispatch").none(), nb::arg("events"))
      .def(
          "train",
          [](PyTrainer& t, std::optional<std::string> resume) {
            TrainOutput out = t.guarded([&] { return live(t).train(resume); });
            return nb::make_tuple(out.global_step, out.training_loss, to_dict(out.metrics));
          },
          nb::arg("resume_from_checkpoint").none(), "-> (global_step, training_loss, metrics)")
      .def(
          "evaluate",
          [](PyTrainer& t, std::optional<DatasetHandle> ds, const std::string& prefix) {
            auto d = dataset_of(ds);
            return to_dict(t.guarded([&] { return live(t).evaluate(d, prefix); }));
          },
          nb::arg("eval_dataset").none(), nb::arg("metric_key_prefix") = "eval")
      .def(
          "predict",
          [](PyTrainer& t, DatasetHandle ds, const std::string& prefix) {
            PredictionOutput out = t.guarded([&] { return live(t).predict(ds.dataset, prefix); });
            return nb::make_tuple(host_array(out.predictions), host_array(out.label_ids),
                                  to_dict(out.metrics));
          },
          nb::arg("test_dataset"), nb::arg("metric_key_prefix") = "test",
          "-> (predictions, label_ids, metrics); NumPy arrays or None")
      .def(
          "save_model",
          [](PyTrainer& t, const std::string& dir) {
            t.guarded([&] {
              live(t).save_model(dir);
              return 0;
            });
          },
          nb::arg("output_dir") = "")
      .def("save_state", [](PyTrainer& t) { live(t).save_state(); })
      .def(
          "set_events",
          [](PyTrainer& t, std::set<std::string> events) {
            LOOM_CHECK(t.bridge != nullptr, "[Trainer] built without a dispatch function");
            t.bridge->set_events(std::move(events));
          },
          nb::arg("events"), "The events the dispatch function is called for.")
      .def(
          "save_metrics",
          [](PyTrainer& t, const std::string& split, const nb::dict& metrics, bool combined) {
            Logs logs;
            for (auto [k, v] : metrics) logs[nb::cast<std::string>(k)] = nb::cast<double>(v);
            live(t).save_metrics(split, logs, combined);
          },
          nb::arg("split"), nb::arg("metrics"), nb::arg("combined") = true)
      .def(
          "state_json", [](PyTrainer& t) { return live(t).state().to_json(); },
          "trainer_state.json's text (transformers' TrainerState fields).");
}

}  // namespace

void bind_trainer(nb::module_& m) {
  bind_trainer_class(m);
  m.def("get_last_checkpoint", &get_last_checkpoint, nb::arg("output_dir"),
        "The newest checkpoint-<N> of output_dir, or None (transformers' get_last_checkpoint).");
}

}  // namespace loom::python
