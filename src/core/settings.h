// settings: typed, cached access to loom's LOOM_* environment variables,
// each declared once in core/settings.def (name, type, default, whether it
// changes compiled code, doc).
//
//   if (settings::flag(Setting::sync_execution)) ...          // LOOM_SYNC_EXECUTION=1
//   int64_t n = settings::integer(Setting::cache_size);        // 1024 unless set
//   const std::string& dir = settings::text(Setting::cache_dir);  // "" unless set
//
// Each variable is read from the environment on its first use and cached:
// a setting read while a step runs costs an atomic load, not a getenv.
// Tests that change a variable call reload() (tests/common/scoped_env.h does).
// Reads from several threads are race-free, also while reload() runs: a
// value once handed out is never freed. Assumes nothing else changes a
// LOOM_* variable while the process runs, except through reload().
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace loom {

/// One LOOM_* variable (settings.def's ids, in its order).
enum class Setting : int {
#define LOOM_BOOL(id, ...) id,
#define LOOM_INT(id, ...) id,
#define LOOM_ENUM(id, ...) id,
#define LOOM_STRING(id, ...) id,
#include "core/settings.def"
#undef LOOM_BOOL
#undef LOOM_INT
#undef LOOM_ENUM
#undef LOOM_STRING
};

namespace settings {

enum class Kind { kBool, kInt, kEnum, kString };
/// kCompiled: the setting changes what a graph compiles to (compile-cache key).
enum Effect { kRuntime, kCompiled };
inline constexpr int64_t kIntMax = std::numeric_limits<int64_t>::max();

/// One row of settings.def.
struct Info {
  Setting id;
  const char* name;  ///< "LOOM_DEBUG"
  Kind kind;
  const char* default_text;  ///< the default as text ("1024", "0", "" = unset)
  int64_t min, max;          ///< kInt only
  const char* choices;       ///< kEnum only: "cols|rows"
  Effect effect;
  const char* doc;
};

/// Every row, in settings.def's (name) order.
const std::vector<Info>& table();
const Info& info(Setting s);

/// The value of a kBool setting. Throws loom::Error when the variable holds
/// anything but "", "0" or "1" (the message names it, its value and "0 or 1"),
/// or when `s` is not a kBool row (a bug).
bool flag(Setting s);
/// The value of a kInt setting: a decimal integer in [min, max] (loom::Error
/// otherwise, naming the variable, its value and the range).
int64_t integer(Setting s);
/// The value of a kEnum (one of its choices, or its default) or kString
/// setting; the reference stays valid for the life of the process.
const std::string& text(Setting s);
/// The variable's text as set (also "" or a bad value), or nullopt when
/// unset; never throws. The compile key hashes these.
const std::optional<std::string>& raw(Setting s);

/// The environment variable `name` as set now, or nullptr: for the variables
/// that are not loom settings and keep their own rules (HOME, XDG_CACHE_HOME,
/// HF_HOME, PJRT_DEVICE, VIRTUAL_ENV, OMP_*, the launchers' RANK, ...); not
/// cached. The one getenv of loom besides the table's. Never throws.
const char* environment(const char* name);

/// Forgets every cached value: the next use reads the environment again.
/// For tests, after setenv/unsetenv.
void reload();

/// LOOM_* variables in the environment that the table does not declare
/// (probably misspelt), sorted.
std::vector<std::string> unknown_in_environment();

/// The table as docs/settings.md lists it (a Markdown table, one row per setting).
std::string markdown_table();

}  // namespace settings
}  // namespace loom
