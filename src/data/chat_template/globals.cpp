// The global functions transformers gives chat templates (chat_template_utils.py,
// _cached_compile_jinja_template): raise_exception(msg), strftime_now(format),
// namespace(**kw) (refusing underscore-prefixed names, as transformers' TemplateNamespace),
// dict(**kw); plus Jinja's own range().
#include "data/chat_template/globals.h"

#include <ctime>

#include "data/chat_template/builtins.h"

namespace loom::jinja {
namespace {

void fill_namespace(Namespace& ns, const CallArgs& a) {
  auto put = [&](const std::string& k, const Value& v) {
    if (!k.empty() && k[0] == '_') {
      throw EvalError("namespace() refuses the underscore-prefixed attribute '" + k + "'");
    }
    for (auto& [name, old] : ns.fields) {
      if (name == k) {
        old = v;
        return;
      }
    }
    ns.fields.emplace_back(k, v);
  };
  for (const Value& v : a.args) {
    if (!v.is_dict()) throw EvalError("namespace() takes a dict or keyword arguments");
    for (const auto& [k, e] : v.dict()) put(k, e);
  }
  for (const auto& [k, v] : a.kwargs) put(k, v);
}

Value range_fn(CallArgs& a) {
  if (a.args.empty() || a.args.size() > 3) throw EvalError("range() takes 1 to 3 arguments");
  for (const Value& v : a.args) {
    if (!v.is_number() || v.is_float()) throw EvalError("range() takes integers");
  }
  int64_t start = a.args.size() > 1 ? a.args[0].as_int() : 0;
  int64_t stop = a.args.size() > 1 ? a.args[1].as_int() : a.args[0].as_int();
  int64_t step = a.args.size() > 2 ? a.args[2].as_int() : 1;
  if (step == 0) throw EvalError("range() step must not be zero");
  List out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    out.emplace_back(i);
    if (out.size() > 100000) throw EvalError("range() longer than 100000 items");
  }
  return out;
}

}  // namespace

Dict make_globals(std::optional<std::time_t> now) {
  Dict g;
  g.emplace_back("raise_exception", Function([](CallArgs& a) -> Value {
                   std::string msg = a.args.empty() ? std::string() : to_str(a.args[0]);
                   throw EvalError("raise_exception: " + msg);
                 }));
  g.emplace_back("strftime_now", Function([now](CallArgs& a) -> Value {
                   if (a.args.empty() || !a.args[0].is_string()) {
                     throw EvalError("strftime_now() needs a format string");
                   }
                   std::time_t t = now ? *now : std::time(nullptr);
                   std::tm tm{};
                   localtime_r(&t, &tm);
                   char buf[256];
                   size_t n = std::strftime(buf, sizeof buf, a.args[0].str().c_str(), &tm);
                   return std::string(buf, n);
                 }));
  g.emplace_back("namespace", Function([](CallArgs& a) -> Value {
                   auto ns = std::make_shared<Namespace>();
                   fill_namespace(*ns, a);
                   return ns;
                 }));
  g.emplace_back("dict", Function([](CallArgs& a) -> Value {
                   Namespace tmp;
                   fill_namespace(tmp, a);
                   return tmp.fields;
                 }));
  g.emplace_back("range", Function(range_fn));
  return g;
}

}  // namespace loom::jinja
