// loom._core's models and optimizers: a PretrainedModel called with
// transformers' argument names (input_ids, attention_mask, labels, ...)
// giving a ModelOutput (.loss, .logits), loaded by the registry
// (auto_from_pretrained: config.json's "architectures") or built from a
// config at random init (the registry entry of a model type and task), and
// torch's AdamW / SGD over its parameters. python/loom/models.py puts
// transformers' AutoModelFor* names on top.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <optional>

#include "bindings.h"
#include "loom/error.h"
#include "loom/model_registry.h"
#include "loom/models.h"
#include "loom/optim.h"

namespace nb = nanobind;

namespace loom::python {
namespace {

using OptTensor = std::optional<Tensor>;
using optim::AdamW;
using optim::AdamWOptions;
using optim::Optimizer;
using optim::SGD;
using optim::SGDOptions;

Tensor or_undefined(const OptTensor& t) { return t ? *t : Tensor(); }
OptTensor defined_or_none(const Tensor& t) { return t.defined() ? OptTensor(t) : std::nullopt; }

ModelOutput call_model(PretrainedModel& model, OptTensor input_ids, OptTensor attention_mask,
                       OptTensor token_type_ids, OptTensor position_ids, OptTensor labels) {
  ModelInputs in;
  in.input_ids = or_undefined(input_ids);
  in.attention_mask = or_undefined(attention_mask);
  in.token_type_ids = or_undefined(token_type_ids);
  in.position_ids = or_undefined(position_ids);
  in.labels = or_undefined(labels);
  nb::gil_scoped_release release;  // eager cpu runs the kernels here
  return model.forward(in);
}

std::shared_ptr<PretrainedModel> from_config(const std::string& model_type, const std::string& task,
                                             const std::string& config_json,
                                             const std::string& device) {
  const ModelTypeEntry& entry = model_type_entry(model_type);
  const ArchitectureEntry* arch = task.empty() ? &entry.base() : entry.for_task(task);
  LOOM_CHECK(arch, "[from_config] model_type ", model_type, " has no ", task, " class (it has ",
             model_types_for_task(task).empty() ? "none" : "another task", ")");
  std::shared_ptr<PretrainedModel> model = arch->make(config_json, "from_config");
  model->to(Device(device));
  return model;
}

void bind_model(nb::module_& m) {
  nb::class_<ModelOutput>(m, "ModelOutput", "A model's outputs; None where not computed.")
      .def_prop_ro("loss", [](const ModelOutput& o) { return defined_or_none(o.loss); })
      .def_prop_ro("logits", [](const ModelOutput& o) { return defined_or_none(o.logits); })
      .def_prop_ro("last_hidden_state",
                   [](const ModelOutput& o) { return defined_or_none(o.last_hidden_state); });
  nb::class_<PretrainedModel>(m, "PretrainedModel",
                              "A transformers-named model: call it with input_ids, labels, ...")
      .def("__call__", &call_model, nb::kw_only(), nb::arg("input_ids") = nb::none(),
           nb::arg("attention_mask") = nb::none(), nb::arg("token_type_ids") = nb::none(),
           nb::arg("position_ids") = nb::none(), nb::arg("labels") = nb::none(),
           "forward: input_ids [B,T] int64, labels [B,T] (-100 ignored) -> .loss [] and .logits.")
      .def("parameters", [](const PretrainedModel& mdl) { return mdl.parameters(); })
      .def("named_parameters", [](const PretrainedModel& mdl) { return mdl.named_parameters(); })
      .def("num_parameters", [](const PretrainedModel& mdl) { return mdl.num_parameters(); })
      .def(
          "train", [](PretrainedModel& mdl, bool on) { mdl.train(on); }, nb::arg("mode") = true)
      .def("eval", [](PretrainedModel& mdl) { mdl.eval(); })
      .def("to", [](PretrainedModel& mdl, const std::string& d) { mdl.to(Device(d)); })
      .def_prop_ro("architecture", &PretrainedModel::architecture)
      .def("config_json", &PretrainedModel::config_json)
      .def(
          "save_pretrained",
          [](PretrainedModel& mdl, const std::string& dir) {
            nb::gil_scoped_release release;
            mdl.save_pretrained(dir);
          },
          nb::arg("save_directory"));
  m.def(
      "auto_from_pretrained",
      [](const std::string& dir, const std::string& device) {
        nb::gil_scoped_release release;
        return auto_from_pretrained(dir, Device(device));
      },
      nb::arg("path"), nb::arg("device") = "cpu",
      "The class config.json's architectures names, with the weights of `path`.");
  m.def("from_config", &from_config, nb::arg("model_type"), nb::arg("task"), nb::arg("config_json"),
        nb::arg("device") = "cpu", "A model of `task` ('' = base) built at random init.");
  m.def(
      "default_config_json",
      [](const std::string& t) { return model_type_entry(t).default_config_json(); },
      nb::arg("model_type"), "transformers' default config of a model type, as JSON text.");
  m.def("serves_task", &serves_task, nb::arg("model"), nb::arg("task"));
}

void bind_optim(nb::module_& m) {
  nb::class_<Optimizer>(m, "Optimizer")
      .def("step",
           [](Optimizer& o) {
             nb::gil_scoped_release release;
             o.step();
           })
      .def("zero_grad", &Optimizer::zero_grad, nb::arg("set_to_none") = true);
  nb::class_<AdamW, Optimizer>(m, "AdamW", "torch.optim.AdamW (decoupled weight decay).")
      .def(
          "__init__",
          [](AdamW* self, std::vector<Tensor> params, double lr, std::pair<double, double> betas,
             double eps, double weight_decay) {
            new (self) AdamW(std::move(params),
                             AdamWOptions{lr, betas.first, betas.second, eps, weight_decay});
          },
          nb::arg("params"), nb::arg("lr") = 1e-3, nb::arg("betas") = std::make_pair(0.9, 0.999),
          nb::arg("eps") = 1e-8, nb::arg("weight_decay") = 1e-2);
  nb::class_<SGD, Optimizer>(m, "SGD", "torch.optim.SGD.")
      .def(
          "__init__",
          [](SGD* self, std::vector<Tensor> params, double lr, double momentum,
             double weight_decay) {
            new (self) SGD(std::move(params), SGDOptions{lr, momentum, 0.0, weight_decay, false});
          },
          nb::arg("params"), nb::arg("lr") = 1e-3, nb::arg("momentum") = 0.0,
          nb::arg("weight_decay") = 0.0);
}

}  // namespace

void bind_models(nb::module_& m) {
  bind_model(m);
  bind_optim(m);
}

}  // namespace loom::python
