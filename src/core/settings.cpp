// settings: the table of core/settings.def and its cache (core/settings.h).
// Each slot holds a pointer to an immutable Value, published once with
// release/acquire; reload() swaps the pointers to null and keeps the old
// Values alive (never freed), so a reader on another thread never sees a
// half-built or freed value. Assumes POSIX (getenv, environ).
#include "core/settings.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string_view>

#include "core/parse_number.h"
#include "loom/error.h"

namespace loom::settings {
namespace {

constexpr int kNumSettings = 0
#define LOOM_BOOL(...) +1
#define LOOM_INT(...) +1
#define LOOM_ENUM(...) +1
#define LOOM_STRING(...) +1
#include "core/settings.def"
#undef LOOM_BOOL
#undef LOOM_INT
#undef LOOM_ENUM
#undef LOOM_STRING
    ;

// A variable as read: its text, and the typed value or why the text is bad.
struct Value {
  std::optional<std::string> raw;
  std::string error;  // non-empty: the text is not accepted
  bool b = false;
  int64_t i = 0;
  std::string s;
};

struct Cache {
  std::array<std::atomic<const Value*>, kNumSettings> slots{};
  std::mutex mu;                              // serializes building and reload()
  std::vector<std::unique_ptr<Value>> owned;  // every Value ever built
};
Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: settings are read at exit
  return *c;
}

// "cols or rows", "0, 1 or 2".
std::string choice_list(std::string_view choices) {
  std::vector<std::string_view> parts;
  for (size_t at = 0;;) {
    size_t bar = choices.find('|', at);
    parts.push_back(choices.substr(at, bar == std::string_view::npos ? bar : bar - at));
    if (bar == std::string_view::npos) break;
    at = bar + 1;
  }
  std::string out;
  for (size_t k = 0; k < parts.size(); ++k)
    out += std::string(k == 0 ? "" : k + 1 == parts.size() ? " or " : ", ") + std::string(parts[k]);
  return out;
}

bool is_choice(std::string_view choices, std::string_view v) {
  for (size_t at = 0;;) {
    size_t bar = choices.find('|', at);
    if (choices.substr(at, bar == std::string_view::npos ? bar : bar - at) == v) return true;
    if (bar == std::string_view::npos) return false;
    at = bar + 1;
  }
}

// What a kInt row accepts: "an integer >= 1", "an integer in [0, 2]".
std::string int_range(const Info& in) {
  if (in.max == kIntMax) return "an integer >= " + std::to_string(in.min);
  return "an integer in [" + std::to_string(in.min) + ", " + std::to_string(in.max) + "]";
}

// Parses `text` (the default when "") by the row's kind; sets v.error when bad.
void parse_into(const Info& in, const std::string& text, Value& v) {
  const std::string& t = text.empty() ? std::string(in.default_text) : text;
  switch (in.kind) {
    case Kind::kBool:
      if (t == "0" || t == "1")
        v.b = t == "1";
      else
        v.error = "expected 0 or 1";
      return;
    case Kind::kInt: {
      std::optional<int64_t> n = parse_decimal_int(t);
      if (n && *n >= in.min && *n <= in.max)
        v.i = *n;
      else
        v.error = "expected " + int_range(in);
      return;
    }
    case Kind::kEnum:
      if (t.empty() || is_choice(in.choices, t))
        v.s = t;
      else
        v.error = "expected " + choice_list(in.choices);
      return;
    case Kind::kString:
      v.s = t;
      return;
  }
}

const Value& value(Setting s) {
  Cache& c = cache();
  std::atomic<const Value*>& slot = c.slots[static_cast<int>(s)];
  if (const Value* v = slot.load(std::memory_order_acquire)) return *v;
  std::lock_guard<std::mutex> lock(c.mu);
  if (const Value* v = slot.load(std::memory_order_acquire)) return *v;
  const Info& in = info(s);
  auto v = std::make_unique<Value>();
  if (const char* env = std::getenv(in.name)) v->raw = env;
  parse_into(in, v->raw.value_or(""), *v);
  const Value* p = v.get();
  c.owned.push_back(std::move(v));
  slot.store(p, std::memory_order_release);
  return *p;
}

// The value of `s`, checked to be of `kind`; throws on a bad text.
const Value& typed(Setting s, Kind kind) {
  const Info& in = info(s);
  LOOM_CHECK(in.kind == kind, "[settings] ", in.name, " is not read as that type");
  const Value& v = value(s);
  LOOM_CHECK(v.error.empty(), "[settings] ", in.name, "='", v.raw.value_or(""), "': ", v.error);
  return v;
}

std::string type_text(const Info& in) {
  switch (in.kind) {
    case Kind::kBool:
      return "bool (0, 1)";
    case Kind::kInt:
      return in.max == kIntMax
                 ? "int >= " + std::to_string(in.min)
                 : "int [" + std::to_string(in.min) + ", " + std::to_string(in.max) + "]";
    case Kind::kEnum:
      return "enum (" + choice_list(in.choices) + ")";
    case Kind::kString:
      return "string";
  }
  return "";
}

}  // namespace

const std::vector<Info>& table() {
  static const std::vector<Info> rows = {
#define LOOM_BOOL(id, name, def, effect, doc) \
  {Setting::id, name, Kind::kBool, (def) ? "1" : "0", 0, 1, "", effect, doc},
#define LOOM_INT(id, name, def, lo, hi, effect, doc) \
  {Setting::id, name, Kind::kInt, #def, lo, hi, "", effect, doc},
#define LOOM_ENUM(id, name, def, choices, effect, doc) \
  {Setting::id, name, Kind::kEnum, def, 0, 0, choices, effect, doc},
#define LOOM_STRING(id, name, def, effect, doc) \
  {Setting::id, name, Kind::kString, def, 0, 0, "", effect, doc},
#include "core/settings.def"
#undef LOOM_BOOL
#undef LOOM_INT
#undef LOOM_ENUM
#undef LOOM_STRING
  };
  return rows;
}

const Info& info(Setting s) { return table()[static_cast<size_t>(s)]; }

bool flag(Setting s) { return typed(s, Kind::kBool).b; }

int64_t integer(Setting s) { return typed(s, Kind::kInt).i; }

const std::string& text(Setting s) {
  Kind k = info(s).kind;
  return typed(s, k == Kind::kEnum ? Kind::kEnum : Kind::kString).s;
}

const std::optional<std::string>& raw(Setting s) { return value(s).raw; }

const char* environment(const char* name) { return std::getenv(name); }

void reload() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  for (auto& slot : c.slots) slot.store(nullptr, std::memory_order_release);
}

std::vector<std::string> unknown_in_environment() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    std::string_view name = entry.substr(0, entry.find('='));
    if (name.substr(0, 5) != "LOOM_") continue;
    bool known = std::any_of(table().begin(), table().end(),
                             [&](const Info& in) { return name == in.name; });
    if (!known) out.emplace_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string markdown_table() {
  std::string out = "| variable | type | default | compiled | effect |\n|---|---|---|---|---|\n";
  auto cell = [](const std::string& s) {  // Markdown: | splits cells, <op> would be a tag
    std::string out;
    for (char c : s) out += c == '|' ? "\\|" : c == '<' ? "&lt;" : std::string(1, c);
    return out;
  };
  for (const Info& in : table()) {
    std::string def = *in.default_text ? "`" + std::string(in.default_text) + "`" : "unset";
    out += "| `" + std::string(in.name) + "` | " + type_text(in) + " | " + def + " | " +
           (in.effect == kCompiled ? "yes" : "no") + " | " + cell(in.doc) + " |\n";
  }
  return out;
}

}  // namespace loom::settings
