// parse_flat_yaml: the YAML that a training config file is (HfArgumentParser's
// parse_yaml_file, TRL's --config): one flat mapping of argument names to
// scalars or lists of scalars, read into a JSON object so that it goes the
// same way as a JSON config.
//
//   # sft.yaml
//   model_name_or_path: Qwen/Qwen3-0.6B
//   learning_rate: 2.0e-5
//   report_to: [tensorboard]        # a flow list ...
//   lora_target_modules:            # ... or a block list
//     - q_proj
//     - v_proj
//
// Scalars (YAML 1.2 core schema, https://yaml.org/spec/1.2.2/ 10.3): plain
// words stay strings (the flag parser types them: "1e-4", "true", "yes" all
// reach the flag as their text), "null", "Null", "NULL", "~" and an empty
// value are null; 'single' and "double" quoted strings are unquoted ("" with
// the escapes \" \\ \n \t). A comment starts at a '#' that opens the line or
// follows a blank, outside quotes. A leading "---" line is allowed.
//
// Anything else is refused, never read differently: nested mappings, block
// scalars (| >), anchors and aliases (& *), tags (!), flow mappings ({}),
// tabs as indentation, a key given twice, several documents. The error is a
// loom::Error "<where>:<line>: <what>", e.g. "[config] a.yaml:3: nested
// mappings are not supported (a config is flat: name: value)".
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace loom::io {

/// The mapping of `text` as a JSON object (values: string, null, or an
/// array of strings and nulls), keys in file order. `where` prefixes errors.
nlohmann::ordered_json parse_flat_yaml(std::string_view text, const std::string& where);

}  // namespace loom::io
