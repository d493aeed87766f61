// loom._core's data side of the Trainer: tokenizers (loom/tokenizer.h) for
// loom.AutoTokenizer, in-memory datasets of pre-tokenized rows
// (input_ids / labels / attention_mask / token_type_ids / label columns, as
// a tokenized Hugging Face dataset has them) and the collators a Python
// Trainer names (DataCollatorWithPadding, DataCollatorForLanguageModeling).
// Python hands whole columns over (lists of lists of ints), never one row at
// a time; the C++ DataLoader reads them from there.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "data_handles.h"
#include "loom/collator.h"
#include "loom/error.h"
#include "loom/tokenizer.h"

namespace nb = nanobind;

namespace loom::python {
namespace {

using IdColumn = std::optional<std::vector<std::vector<int64_t>>>;

// Column `name` of `n` rows into one Example field per row.
void fill_column(std::vector<data::Example>& ex, const IdColumn& col, const char* name,
                 std::vector<int64_t> data::Example::*field) {
  if (!col) return;
  LOOM_CHECK(col->size() == ex.size(), "[dataset] column '", name, "' has ", col->size(),
             " rows, input_ids ", ex.size());
  for (size_t i = 0; i < ex.size(); ++i) ex[i].*field = (*col)[i];
}

DatasetHandle examples_dataset(std::vector<std::vector<int64_t>> input_ids, IdColumn labels,
                               IdColumn attention_mask, IdColumn token_type_ids,
                               std::optional<std::vector<int64_t>> label) {
  std::vector<data::Example> ex(input_ids.size());
  for (size_t i = 0; i < ex.size(); ++i) {
    LOOM_CHECK(!input_ids[i].empty(), "[dataset] row ", i, ": input_ids is empty");
    ex[i].input_ids = std::move(input_ids[i]);
  }
  fill_column(ex, labels, "labels", &data::Example::labels);
  fill_column(ex, attention_mask, "attention_mask", &data::Example::attention_mask);
  fill_column(ex, token_type_ids, "token_type_ids", &data::Example::token_type_ids);
  if (label) {
    LOOM_CHECK(label->size() == ex.size(), "[dataset] column 'label' has ", label->size(),
               " rows, input_ids ", ex.size());
    for (size_t i = 0; i < ex.size(); ++i) ex[i].label = (*label)[i];
  }
  nb::gil_scoped_release release;
  return {std::make_shared<data::InMemoryDataset>(std::move(ex))};
}

// kind: "padding" (DataCollatorWithPadding: labels padded with -100) or
// "causal-lm" (DataCollatorForLanguageModeling(mlm=False): labels = input_ids).
CollatorHandle make_collator(const std::string& kind, int64_t pad_id, int64_t pad_to_multiple_of) {
  data::PadOptions pad;
  pad.pad_id = pad_id;
  pad.pad_to_multiple_of = pad_to_multiple_of;
  if (kind == "padding") return {std::make_shared<data::PaddingCollator>(pad)};
  if (kind == "causal-lm") return {std::make_shared<data::CausalLMCollator>(pad)};
  fail("[collator] unknown kind '", kind, "' (expected padding or causal-lm)");
}

std::vector<std::vector<int64_t>> encode_batch(const Tokenizer& tok, std::vector<std::string> texts,
                                               bool add_special_tokens) {
  EncodeOptions opts = tok.default_options();
  opts.add_special_tokens = add_special_tokens;
  std::vector<Encoding> enc;
  {
    nb::gil_scoped_release release;
    enc = tok.encode_batch(texts, opts);
  }
  std::vector<std::vector<int64_t>> ids(enc.size());
  for (size_t i = 0; i < enc.size(); ++i) ids[i].assign(enc[i].ids.begin(), enc[i].ids.end());
  return ids;
}

void bind_tokenizer(nb::module_& m) {
  nb::class_<Tokenizer>(m, "Tokenizer", "A loaded tokenizer (tokenizer.json or vocab files).")
      .def_static(
          "from_pretrained",
          [](const std::string& dir) {
            nb::gil_scoped_release release;
            return Tokenizer::from_pretrained(dir);
          },
          nb::arg("path"), "Loads the tokenizer files of a directory.")
      .def("encode_batch", &encode_batch, nb::arg("texts"), nb::arg("add_special_tokens") = true,
           "Token ids of each text (int), as tokenizer(texts)['input_ids'].")
      .def(
          "decode",
          [](const Tokenizer& t, std::vector<int32_t> ids, bool skip) {
            return t.decode(ids, skip);
          },
          nb::arg("ids"), nb::arg("skip_special_tokens") = false)
      .def_prop_ro("vocab_size", &Tokenizer::vocab_size)
      .def_prop_ro("pad_token_id", &Tokenizer::pad_token_id)
      .def_prop_ro("eos_token_id", &Tokenizer::eos_token_id)
      .def_prop_ro("bos_token_id", &Tokenizer::bos_token_id);
}

}  // namespace

void bind_data(nb::module_& m) {
  nb::class_<DatasetHandle>(m, "Dataset", "Examples held by the C++ side (tokenized).")
      .def("__len__", [](const DatasetHandle& d) { return d.dataset->size(); });
  nb::class_<CollatorHandle>(m, "Collator", "A C++ collator: examples -> padded batch.");
  m.def("examples_dataset", &examples_dataset, nb::arg("input_ids"), nb::arg("labels") = nb::none(),
        nb::arg("attention_mask") = nb::none(), nb::arg("token_type_ids") = nb::none(),
        nb::arg("label") = nb::none(),
        "Pre-tokenized rows by column: input_ids [[int]], per-token labels / attention_mask / "
        "token_type_ids (same lengths), or one class id per row (label). LoomError on "
        "mismatched lengths.");
  m.def("make_collator", &make_collator, nb::arg("kind"), nb::arg("pad_id") = 0,
        nb::arg("pad_to_multiple_of") = 0);
  bind_tokenizer(m);
}

}  // namespace loom::python
