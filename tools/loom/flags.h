// FlagSet: the `--name value` flags of a `loom` subcommand that takes many
// named settings (train, evaluate), registered on its CLI11 app from a table
// of (name, type, help). What it adds to CLI11:
//   - booleans accept `--flag`, `--flag true|false` and `--flag=false`;
//   - a flag given twice keeps the last value (as argparse does);
//   - an unknown flag fails with "unknown flag '--lerning_rate' (did you
//     mean --learning_rate?)" (edit distance, as TrainingArguments::suggest);
//   - a JSON file of the same names (`--config file.json`) fills the flags
//     the command line did not give.
// Assumes the app was created with allow_extras() by add_to(), so unknown
// flags reach check_unknown() instead of CLI11's own error.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/edit_distance.h"

namespace loom::cli {

/// One flag's description: `type` is "bool", "int", "float", "string" or one
/// of those followed by "?" (may be "none"), as TrainingArguments::FieldInfo.
struct FlagInfo {
  std::string name;  ///< without the leading "--"
  std::string type;
  std::string help;
};

class FlagSet {
 public:
  /// Adds `flags` (names must be unique across all add() calls; a duplicate
  /// is a programming error and throws loom::Error).
  void add(const std::vector<FlagInfo>& flags, const std::string& group);
  /// Registers every flag as an option of `app` (in its group) and sets
  /// allow_extras() so unknown flags can be reported by check_unknown().
  void add_to(CLI::App& app);

  /// Throws loom::Error "[<command>] unknown flag '--x' (did you mean --y?)"
  /// for the first leftover argument of `app` that looks like a flag, or
  /// "[<command>] unexpected argument 'x'" for a stray word.
  void check_unknown(const CLI::App& app, const std::string& command) const;

  /// The flags given on the command line, name -> text value (a bare boolean
  /// flag gives "true").
  std::map<std::string, std::string> given() const;

  /// Reads a config file of flag names to values from `path`: a JSON object
  /// (.json) or a flat YAML mapping (.yaml/.yml, io/flat_yaml.h), as
  /// HfArgumentParser's parse_json_file / parse_yaml_file. Values: strings,
  /// numbers, bools, null -> "none", lists of those -> comma-joined ([] ->
  /// "none"). Throws loom::Error naming the file when it cannot be read or
  /// parsed, has another extension, a value is an object or a nested list,
  /// and for an unknown key (with a suggestion).
  std::map<std::string, std::string> read_config(const std::string& path) const;

  /// The config file given as the command's one positional argument
  /// (`loom train args.json`, as run_clm's `python run_clm.py args.json`):
  /// a leftover word ending in .json, .yaml or .yml; "" when none. Throws
  /// loom::Error for two of them.
  std::string positional_config(const CLI::App& app) const;

  /// Makes `name` (a flag of another subcommand) an error here, with `why`
  /// ("[<command>] --<name>: <why>"), on the command line and in --config.
  void refuse(const std::string& name, const std::string& why);

  /// The known flag closest to `name` by edit distance, or "" when none is
  /// within max(2, |name| / 3).
  std::string suggest(const std::string& name) const;
  bool contains(const std::string& name) const;

 private:
  std::vector<FlagInfo> flags_;
  std::vector<std::string> groups_;             // group of flags_[i]
  std::map<std::string, std::string> refused_;  // name -> why (refuse())
  // CLI11 writes each option's results here; std::map nodes are stable.
  std::map<std::string, std::vector<std::string>> results_;
};

/// True for a path ending in .json, .yaml or .yml (a config file's).
bool is_config_file(const std::string& path);

/// "true"/"1"/"yes"/"on" -> true, "false"/"0"/"no"/"off" -> false (any
/// case, as HfArgumentParser's string_to_bool); nullopt for anything else.
std::optional<bool> parse_bool_text(std::string s);

/// Adds the boolean flag `name` ("--do_sample") to `app`, taking an optional
/// value as `loom train`'s flags and HfArgumentParser do: `--x`, `--x true`,
/// `--x=false`. With `negate` ("--no_cache") the flag sets `target` to the
/// opposite. A bad value throws loom::Error "[<command>] --x: expected
/// true or false, got 'maybe'".
CLI::Option* add_bool_flag(CLI::App& app, const std::string& name, bool& target,
                           const std::string& help, const std::string& command,
                           bool negate = false);

/// Throws loom::Error for the leftover argument `arg` of `command` ("loom
/// train"): "[<command>] unexpected argument 'x'" for a stray word, the
/// hf_flag_answer of a Trainer flag loom refuses by name, or "[<command>]
/// unknown flag '--x' (did you mean --y?)" with the closest of `known`
/// (without the suggestion when none is close). Never returns.
[[noreturn]] void fail_unknown_argument(const std::string& arg, const std::string& command,
                                        const std::vector<std::string>& known);

/// Why loom has no flag `name` that Hugging Face users bring from the Trainer
/// or run_clm (fp16, push_to_hub, torch_compile, dataset_name, deepspeed, ...):
/// one sentence saying what loom does instead; "" for any other name.
std::string hf_flag_answer(const std::string& name);

/// True when `value` (a flag's text: "false", "none" for JSON null) is the
/// default Hugging Face's dataclasses give `name`, a flag loom refuses or
/// does not have (fp16 false, push_to_hub false, do_predict false,
/// remove_unused_columns true, ...: hf_defaults.cpp): it asks for nothing,
/// so the command line and config files accept it silently (an exported
/// training_args.json runs). False for every other name and value.
bool hf_value_asks_nothing(const std::string& name, const std::string& value);

}  // namespace loom::cli
