// Jinja2 evaluation of a parsed chat template (see evaluator.h for the scoping rules).
// Operators follow Python's semantics (int/float promotion, str and list `+`, `//` and `%`
// floored, `and`/`or` returning an operand); output is Python's str() of the value, with
// undefined printing as nothing (Jinja's default Undefined).
#include "data/chat_template/evaluator.h"

#include <cmath>
#include <map>
#include <memory>

#include "data/chat_template/builtins.h"
#include "data/chat_template/operators.h"
#include "loom/error.h"

namespace loom::jinja {
namespace {

using Scope = std::map<std::string, Value, std::less<>>;

enum class Flow { kNormal, kBreak, kContinue };

class Evaluator {
 public:
  Evaluator(const Dict& context, const Dict& globals, const std::string& name) : name_(name) {
    auto root = std::make_shared<Scope>();
    for (const auto& [k, v] : globals) (*root)[k] = v;
    for (const auto& [k, v] : context) (*root)[k] = v;
    scopes_.push_back(root);
    scopes_.push_back(std::make_shared<Scope>());
  }

  RenderResult run(const Body& body) {
    out_ = &result_.text;
    exec_body(body);
    return std::move(result_);
  }

 private:
  [[noreturn]] void fail(int line, const std::string& msg) const {
    loom::fail("[chat_template] ", name_, " line ", line, ": ", msg);
  }

  // ----- statements -----
  Flow exec_body(const Body& body) {
    for (const NodePtr& n : body) {
      Flow f = exec(*n);
      if (f != Flow::kNormal) return f;
    }
    return Flow::kNormal;
  }

  Flow exec(const Node& n) {
    switch (n.kind) {
      case Node::Kind::kText:
        *out_ += n.text;
        return Flow::kNormal;
      case Node::Kind::kOutput:
        *out_ += to_str(eval(*n.exprs[0]));
        return Flow::kNormal;
      case Node::Kind::kIf:
        for (size_t i = 0; i < n.exprs.size(); ++i) {
          if (truthy(eval(*n.exprs[i]))) return exec_body(n.bodies[i]);
        }
        if (n.bodies.size() > n.exprs.size()) return exec_body(n.bodies.back());
        return Flow::kNormal;
      case Node::Kind::kFor:
        exec_for(n);
        return Flow::kNormal;
      case Node::Kind::kSet:
        exec_set(n);
        return Flow::kNormal;
      case Node::Kind::kSetBlock:
        scopes_.back()->insert_or_assign(n.names[0], capture(n.bodies[0], n.line));
        return Flow::kNormal;
      case Node::Kind::kMacro:
        define_macro(n);
        return Flow::kNormal;
      case Node::Kind::kBreak:
        if (loop_depth_ == 0) fail(n.line, "'break' outside a for loop");
        return Flow::kBreak;
      case Node::Kind::kContinue:
        if (loop_depth_ == 0) fail(n.line, "'continue' outside a for loop");
        return Flow::kContinue;
      case Node::Kind::kGeneration: {
        if (capture_depth_ > 0)
          fail(n.line, "unsupported: {% generation %} inside a macro or block set");
        size_t begin = out_->size();
        Flow f = exec_body(n.bodies[0]);
        result_.generation.emplace_back(begin, out_->size());
        return f;
      }
    }
    return Flow::kNormal;
  }

  std::string capture(const Body& body, int line) {
    std::string buffer;
    std::string* saved = out_;
    out_ = &buffer;
    ++capture_depth_;
    int saved_loops = loop_depth_;
    loop_depth_ = 0;
    try {
      exec_body(body);
    } catch (...) {
      out_ = saved;
      --capture_depth_;
      loop_depth_ = saved_loops;
      throw;
    }
    out_ = saved;
    --capture_depth_;
    loop_depth_ = saved_loops;
    (void)line;
    return buffer;
  }

  std::vector<Value> iterate(const Value& v, int line) {
    if (v.is_list()) return v.list();
    if (v.is_undefined()) return {};
    if (v.is_dict()) {
      std::vector<Value> keys;
      for (const auto& [k, e] : v.dict()) keys.emplace_back(k);
      return keys;
    }
    if (v.is_string()) {
      std::vector<Value> chars;
      for (std::string& c : utf8_chars(v.str())) chars.emplace_back(std::move(c));
      return chars;
    }
    fail(line, "'" + type_name(v) + "' object is not iterable");
  }

  void bind(Scope& scope, const std::vector<std::string>& names, const Value& v, int line) {
    if (names.size() == 1) {
      scope.insert_or_assign(names[0], v);
      return;
    }
    std::vector<Value> parts = iterate(v, line);
    if (parts.size() != names.size()) {
      fail(line, "cannot unpack " + std::to_string(parts.size()) + " values into " +
                     std::to_string(names.size()) + " names");
    }
    for (size_t i = 0; i < names.size(); ++i) scope.insert_or_assign(names[i], parts[i]);
  }

  void exec_for(const Node& n) {
    std::vector<Value> all = iterate(eval(*n.exprs[0]), n.line);
    std::vector<Value> items;
    for (const Value& item : all) {
      if (!n.exprs[1]) {
        items.push_back(item);
        continue;
      }
      scopes_.push_back(std::make_shared<Scope>());
      bind(*scopes_.back(), n.names, item, n.line);
      bool keep = truthy(eval(*n.exprs[1]));
      scopes_.pop_back();
      if (keep) items.push_back(item);
    }
    if (items.empty()) {
      if (n.bodies.size() > 1) {
        scopes_.push_back(std::make_shared<Scope>());
        exec_body(n.bodies[1]);
        scopes_.pop_back();
      }
      return;
    }
    ++loop_depth_;
    for (size_t i = 0; i < items.size(); ++i) {
      scopes_.push_back(std::make_shared<Scope>());
      bind(*scopes_.back(), n.names, items[i], n.line);
      scopes_.back()->insert_or_assign("loop", loop_object(items, i));
      Flow f = exec_body(n.bodies[0]);
      scopes_.pop_back();
      if (f == Flow::kBreak) break;
    }
    --loop_depth_;
  }

  // Jinja's `loop` variable (index is 1-based, revindex counts down to 1).
  static Value loop_object(const std::vector<Value>& items, size_t i) {
    int64_t n = static_cast<int64_t>(items.size());
    int64_t k = static_cast<int64_t>(i);
    Dict loop{{"index", k + 1},
              {"index0", k},
              {"revindex", n - k},
              {"revindex0", n - k - 1},
              {"first", i == 0},
              {"last", k == n - 1},
              {"length", n},
              {"depth", int64_t{1}},
              {"depth0", int64_t{0}},
              {"previtem", i > 0 ? items[i - 1] : Value(Undefined{"there is no previous item"})},
              {"nextitem", k + 1 < n ? items[i + 1] : Value(Undefined{"there is no next item"})}};
    loop.emplace_back("cycle", Function([k](CallArgs& a) -> Value {
                        if (a.args.empty())
                          throw EvalError("loop.cycle() needs at least one value");
                        return a.args[static_cast<size_t>(k) % a.args.size()];
                      }));
    return loop;
  }

  void exec_set(const Node& n) {
    Value v = eval(*n.exprs[0]);
    if (n.attr.empty()) {
      bind(*scopes_.back(), n.names, v, n.line);
      return;
    }
    Value target = lookup(n.names[0]);
    if (!target.is_namespace()) {
      fail(n.line, "cannot assign attribute '" + n.attr + "' on '" + n.names[0] + "': it is a " +
                       type_name(target) + ", not a namespace()");
    }
    Dict& fields = target.ns().fields;
    for (auto& [k, e] : fields) {
      if (k == n.attr) {
        e = v;
        return;
      }
    }
    fields.emplace_back(n.attr, v);
  }

  void define_macro(const Node& n) {
    const Node* node = &n;
    Function fn = [this, node](CallArgs& a) -> Value {
      size_t params = node->names.size() - 1;
      if (a.args.size() > params) {
        throw EvalError("macro '" + node->names[0] + "' takes " + std::to_string(params) +
                        " arguments, got " + std::to_string(a.args.size()));
      }
      auto scope = std::make_shared<Scope>();
      for (size_t i = 0; i < params; ++i) {
        const std::string& p = node->names[i + 1];
        std::optional<Value> given = arg(a, i, p.c_str());
        if (given) {
          (*scope)[p] = *given;
        } else if (node->exprs[i]) {
          (*scope)[p] = eval(*node->exprs[i]);
        } else {
          (*scope)[p] = Undefined{"'" + p + "' is undefined"};
        }
      }
      for (const auto& [k, v] : a.kwargs) {
        if (scope->find(k) == scope->end()) {
          throw EvalError("macro '" + node->names[0] + "' has no parameter '" + k + "'");
        }
      }
      std::vector<std::shared_ptr<Scope>> saved = scopes_;
      scopes_ = {saved[0], saved[1], scope};
      std::string text;
      try {
        text = capture(node->bodies[0], node->line);
      } catch (...) {
        scopes_ = saved;
        throw;
      }
      scopes_ = saved;
      return text;
    };
    scopes_.back()->insert_or_assign(n.names[0], Value(std::move(fn)));
  }

  // ----- expressions -----
  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto hit = (*it)->find(name);
      if (hit != (*it)->end()) return hit->second;
    }
    return Undefined{"'" + name + "' is undefined"};
  }

  CallArgs eval_args(const Expr& e, size_t first) {
    CallArgs a;
    size_t n_kw = e.kw_names.size();
    size_t n_pos = e.kids.size() - first - n_kw;
    for (size_t i = 0; i < n_pos; ++i) a.args.push_back(eval(*e.kids[first + i]));
    for (size_t i = 0; i < n_kw; ++i) {
      a.kwargs.emplace_back(e.kw_names[i], eval(*e.kids[first + n_pos + i]));
    }
    return a;
  }

 public:
  Value eval(const Expr& e) {
    try {
      return eval_inner(e);
    } catch (const EvalError& err) {
      fail(e.line, err.what());
    } catch (const std::bad_variant_access&) {
      fail(e.line, "an operand or argument has the wrong type");
    } catch (const std::logic_error& err) {  // std::stoll and friends on a bad argument
      fail(e.line, err.what());
    }
  }

 private:
  // {k: v, ...}: a repeated key keeps its first position and its last value, as in Python.
  Value eval_dict(const Expr& e) {
    Dict d;
    for (size_t i = 0; i + 1 < e.kids.size(); i += 2) {
      Value key = eval(*e.kids[i]);
      if (!key.is_string()) throw EvalError("dict keys must be strings, got " + type_name(key));
      Value val = eval(*e.kids[i + 1]);
      bool replaced = false;
      for (auto& [k, v] : d) {
        if (k == key.str()) {
          v = val;
          replaced = true;
        }
      }
      if (!replaced) d.emplace_back(key.str(), val);
    }
    return d;
  }

  // a < b < c: each pair in turn, stopping at the first false (Python's chaining).
  Value eval_compare(const Expr& e) {
    Value left = eval(*e.kids[0]);
    for (size_t i = 0; i < e.ops.size(); ++i) {
      Value right = eval(*e.kids[i + 1]);
      if (!compare_op(e.ops[i], left, right)) return false;
      left = std::move(right);
    }
    return true;
  }

  Value eval_inner(const Expr& e) {
    using K = Expr::Kind;
    switch (e.kind) {
      case K::kLiteral:
        return e.literal;
      case K::kName:
        return lookup(e.name);
      case K::kList:
      case K::kTuple: {
        List l;
        for (const ExprPtr& k : e.kids) l.push_back(eval(*k));
        return e.kind == K::kTuple ? tuple_of(std::move(l)) : Value(std::move(l));
      }
      case K::kDict:
        return eval_dict(e);
      case K::kAttr:
        return get_attr(eval(*e.kids[0]), e.name);
      case K::kItem:
        return get_item(eval(*e.kids[0]), eval(*e.kids[1]));
      case K::kSlice:
        return slice(eval(*e.kids[0]), e.kids[1] ? eval(*e.kids[1]) : Value(NoneType{}),
                     e.kids[2] ? eval(*e.kids[2]) : Value(NoneType{}),
                     e.kids[3] ? eval(*e.kids[3]) : Value(NoneType{}));
      case K::kCall: {
        Value callee = eval(*e.kids[0]);
        CallArgs a = eval_args(e, 1);
        if (callee.is_undefined()) throw EvalError(std::get<Undefined>(callee.v).name);
        if (!callee.is_callable())
          throw EvalError("'" + type_name(callee) + "' object is not callable");
        return callee.fn()(a);
      }
      case K::kFilter: {
        Value v = eval(*e.kids[0]);
        CallArgs a = eval_args(e, 1);
        return apply_filter(e.name, v, a);
      }
      case K::kTest: {
        Value v = eval(*e.kids[0]);
        CallArgs a = eval_args(e, 1);
        return apply_test(e.name, v, a) != e.negated;
      }
      case K::kUnary: {
        Value v = eval(*e.kids[0]);
        if (e.name == "not") return !truthy(v);
        return unary_op(e.name, v);
      }
      case K::kBinary: {
        Value a = eval(*e.kids[0]);
        if (e.name == "and") return truthy(a) ? eval(*e.kids[1]) : a;
        if (e.name == "or") return truthy(a) ? a : eval(*e.kids[1]);
        return binary_op(e.name, a, eval(*e.kids[1]));
      }
      case K::kCompare:
        return eval_compare(e);
      case K::kCond:
        if (truthy(eval(*e.kids[1]))) return eval(*e.kids[0]);
        if (e.kids[2]) return eval(*e.kids[2]);
        return Undefined{"the inline if had no else"};
    }
    return Undefined{};
  }

  const std::string& name_;
  std::vector<std::shared_ptr<Scope>> scopes_;
  RenderResult result_;
  std::string* out_ = nullptr;
  int capture_depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

RenderResult render(const Body& body, const Dict& context, const Dict& globals,
                    const std::string& name) {
  try {
    return Evaluator(context, globals, name).run(body);
  } catch (const EvalError& e) {  // raised outside any expression (should not happen)
    loom::fail("[chat_template] ", name, ": ", e.what());
  }
}

}  // namespace loom::jinja
