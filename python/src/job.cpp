// loom._core.build_job: the training job's library API (loom/job.h) for the
// Python Trainer / SFTTrainer: JobArguments from a dict of its field names
// (ModelArguments, DataTrainingArguments, LoraArguments, SftArguments: the
// flag names of `loom train`), rows in memory as DataRows, an optional
// model already built (Trainer(model=loom_model)). The result gives the
// datasets, collator, model and tokenizer directory the Trainer takes.
// Assumes the TrainingArguments arrive as training_args.json text (the
// dataclass's to_dict(), as python/src/training_args.cpp reads them).
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bindings.h"
#include "data_handles.h"
#include "loom/error.h"
#include "loom/hub.h"
#include "loom/job.h"

namespace nb = nanobind;

namespace loom::python {
namespace {

using J = JobArguments;

const std::map<std::string, std::string J::*>& string_fields() {
  static const std::map<std::string, std::string J::*> f = {
      {"model_name_or_path", &J::model_name_or_path},
      {"model_type", &J::model_type},
      {"config_name", &J::config_name},
      {"config_overrides", &J::config_overrides},
      {"tokenizer_name", &J::tokenizer_name},
      {"revision", &J::revision},
      {"train_file", &J::train_file},
      {"validation_file", &J::validation_file},
      {"text_column", &J::text_column},
      {"text_pair_column", &J::text_pair_column},
      {"label_column", &J::label_column},
      {"lora_target_modules", &J::lora_target_modules},
      {"dataset_text_field", &J::dataset_text_field},
      {"eos_token", &J::eos_token},
      {"chat_template_path", &J::chat_template_path},
      {"packing_strategy", &J::packing_strategy},
      {"task", &J::task}};
  return f;
}

const std::map<std::string, std::optional<int64_t> J::*>& optional_int_fields() {
  static const std::map<std::string, std::optional<int64_t> J::*> f = {
      {"block_size", &J::block_size},
      {"max_seq_length", &J::max_seq_length},
      {"max_train_samples", &J::max_train_samples},
      {"max_eval_samples", &J::max_eval_samples},
      {"max_length", &J::max_length}};
  return f;
}

const std::map<std::string, bool J::*>& bool_fields() {
  static const std::map<std::string, bool J::*> f = {
      {"pad_to_max_length", &J::pad_to_max_length},
      {"keep_linebreaks", &J::keep_linebreaks},
      {"use_lora", &J::use_lora},
      {"merge_lora", &J::merge_lora},
      {"assistant_only_loss", &J::assistant_only_loss},
      {"packing", &J::packing},
      {"padding_free", &J::padding_free}};
  return f;
}

// "text" / "json" + the rows.
DataRows data_rows(const std::string& key,
                   const std::pair<std::string, std::vector<std::string>>& v) {
  if (v.first == "text") return DataRows::texts(v.second);
  if (v.first == "json") return DataRows::json(v.second);
  fail("[job] ", key, ": row kind '", v.first, "' (expected text or json)");
}

// One dict entry onto `job`; LoomError naming the key for an unknown key or a wrong type.
void set_field(J& job, const std::string& key, nb::handle value) {
  try {
    if (auto s = string_fields().find(key); s != string_fields().end()) {
      job.*(s->second) = nb::cast<std::string>(value);
    } else if (auto o = optional_int_fields().find(key); o != optional_int_fields().end()) {
      job.*(o->second) =
          value.is_none() ? std::nullopt : std::optional<int64_t>(nb::cast<int64_t>(value));
    } else if (auto b = bool_fields().find(key); b != bool_fields().end()) {
      LOOM_CHECK(nb::isinstance<nb::bool_>(value), "[job] ", key, ": expected True or False");
      job.*(b->second) = nb::cast<bool>(value);
    } else if (key == "completion_only_loss") {
      job.completion_only_loss =
          value.is_none() ? std::nullopt : std::optional<bool>(nb::cast<bool>(value));
    } else if (key == "validation_split_percentage" || key == "pad_to_multiple_of" ||
               key == "lora_r") {
      int64_t v = nb::cast<int64_t>(value);
      if (key == "lora_r")
        job.lora_r = v;
      else if (key == "pad_to_multiple_of")
        job.pad_to_multiple_of = v;
      else
        job.validation_split_percentage = v;
    } else if (key == "lora_alpha" || key == "lora_dropout" || key == "mlm_probability") {
      double v = nb::cast<double>(value);
      if (key == "lora_alpha")
        job.lora_alpha = v;
      else if (key == "lora_dropout")
        job.lora_dropout = v;
      else
        job.mlm_probability = v;
    } else if (key == "train_rows" || key == "validation_rows") {
      auto rows = data_rows(key, nb::cast<std::pair<std::string, std::vector<std::string>>>(value));
      (key == "train_rows" ? job.train_rows : job.validation_rows) = std::move(rows);
    } else {
      fail("[job] unknown argument '", key, "'");
    }
  } catch (const nb::cast_error&) {
    fail("[job] ", key, ": wrong type ", nb::inst_name(value.type()).c_str());
  }
}

struct BuiltJob {
  Job job;
};

BuiltJob build(const nb::dict& fields, const std::string& args_json,
               std::shared_ptr<PretrainedModel> model, bool want_train, bool want_eval) {
  J job;
  JobOptions options{.want_train = want_train, .want_eval = want_eval};
  for (auto [k, v] : fields) {
    const std::string key = nb::cast<std::string>(k);
    set_field(job, key, v);
    options.given.insert(key);
  }
  // The dataclass's value rules (transformers' default False), not the CLI's.
  options.given.insert("prediction_loss_only");
  options.model = std::move(model);
  TrainingArguments args = TrainingArguments::from_json(args_json, "TrainingArguments");
  nb::gil_scoped_release release;  // tokenizing runs on the thread pool
  return {build_job(job, args, options)};
}

}  // namespace

void bind_job(nb::module_& m) {
  nb::class_<BuiltJob>(m, "Job", "A built training job (loom/job.h): datasets, collator, model.")
      .def_prop_ro("model", [](const BuiltJob& b) { return b.job.model; })
      .def_prop_ro("task", [](const BuiltJob& b) { return b.job.plan.task; })
      .def_prop_ro("tokenizer_dir", [](const BuiltJob& b) { return b.job.tokenizer_dir; })
      .def_prop_ro("train_dataset",
                   [](const BuiltJob& b) -> std::optional<DatasetHandle> {
                     if (!b.job.data.train) return std::nullopt;
                     return DatasetHandle{b.job.data.train};
                   })
      .def_prop_ro("eval_dataset",
                   [](const BuiltJob& b) -> std::optional<DatasetHandle> {
                     if (!b.job.data.eval) return std::nullopt;
                     return DatasetHandle{b.job.data.eval};
                   })
      .def_prop_ro("collator",
                   [](const BuiltJob& b) { return CollatorHandle{b.job.options.data_collator}; });
  m.def("build_job", &build, nb::arg("fields"), nb::arg("args_json"), nb::arg("model") = nb::none(),
        nb::arg("want_train") = true, nb::arg("want_eval") = true,
        "loom::build_job: `fields` are JobArguments' names (train_rows / validation_rows as "
        "('text'|'json', [str])); `model` replaces the one build_job would build. Raises "
        "LoomError naming the argument or file at fault.");
  m.def(
      "resolve_model_dir",
      [](const std::string& id, const std::string& revision) {
        return resolve_model_dir(id, revision, "model");
      },
      nb::arg("name_or_path"), nb::arg("revision") = "main",
      "A directory as is, or a hub id's snapshot in the local Hugging Face cache.");
}

}  // namespace loom::python
