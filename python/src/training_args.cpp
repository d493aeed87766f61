// loom._core.training_args_*: the C++ TrainingArguments field table for the
// Python dataclass python/loom/training_args.py builds from it at import
// (name, type, default, help: one table, so the two never drift apart) and
// the C++ validate() it calls from __post_init__. Values cross as JSON text:
// TrainingArguments::from_json / to_json are the C++ side's own reader and
// writer (training_args.json), so Python sees exactly what `loom train` does.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "loom/training_args.h"

namespace nb = nanobind;

namespace loom::python {

void bind_training_args(nb::module_& m) {
  m.def(
      "training_args_fields",
      [] {
        std::vector<std::tuple<std::string, std::string, std::string>> out;
        for (const auto& f : TrainingArguments::fields()) out.emplace_back(f.name, f.type, f.help);
        return out;
      },
      "(name, type, help) of every TrainingArguments field in declaration order; type is bool, "
      "int, float, string, or one of them with '?' (optional).");
  m.def(
      "training_args_defaults", [] { return TrainingArguments().to_json(); },
      "The default value of every field, as a JSON object (unset optionals are null).");
  m.def(
      "training_args_validate",
      [](const std::string& json) {
        TrainingArguments args = TrainingArguments::from_json(json, "TrainingArguments");
        args.validate();
        return args.to_json();
      },
      nb::arg("json"),
      "Reads the fields from a JSON object, runs validate() (derived defaults, checks) and "
      "returns every field as JSON. Raises LoomError '[TrainingArguments] <name>: ...'.");
}

}  // namespace loom::python
