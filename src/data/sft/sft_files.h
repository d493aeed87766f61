// SFT rows from files: .jsonl / .ndjson (one object a line), .json (an array
// of objects, or JSON lines) and .parquet (a Hub dataset's shards; through
// io/parquet_rows.h, only the columns TRL's schemas use). Each row keeps
// where it came from ("train.jsonl:3", "train.parquet: row 3") for errors.
#pragma once

#include <string>
#include <vector>

#include "data/sft/sft_examples.h"

namespace loom::data {

/// The columns of a Parquet file that SFT reads (TRL's schemas and their
/// extras): dataset_text_field, messages, prompt, completion, tools,
/// chat_template_kwargs, input_ids, completion_mask, assistant_masks.
std::vector<std::string> sft_columns(const std::string& dataset_text_field);

/// Every row of `path`, in order. `what` names the file in errors ("--train_file
/// 'x'"). Throws loom::Error "[sft] <what>: ..." for another extension, a
/// missing file, a JSON syntax error (file and line), a Parquet file without
/// any column of TRL's schemas (listing its columns), or Parquet in a build
/// without pyarrow ("Parquet needs pyarrow: run scripts/setup.sh").
std::vector<SftRow> read_sft_rows(const std::string& path, const std::string& what,
                                  const std::string& dataset_text_field);

}  // namespace loom::data
