// Recursive-descent parser for chat templates; the grammar and precedence are Jinja2's
// documented ones (see parser.h). Filter and test names are checked here, so a template that
// uses one loom lacks fails when it is loaded, not halfway through a render.
#include "data/chat_template/parser.h"

#include <initializer_list>
#include <set>

#include "data/chat_template/builtins.h"
#include "loom/error.h"

namespace loom::jinja {
namespace {

class Parser {
 public:
  Parser(const std::vector<Token>& toks, const std::string& name) : t_(toks), name_(name) {}

  Body parse_template() {
    std::string end;
    Body body = parse_body({}, end);
    return body;
  }

 private:
  [[noreturn]] void fail(int line, const std::string& msg) const {
    loom::fail("[chat_template] ", name_, " line ", line, ": ", msg);
  }
  const Token& peek(size_t ahead = 0) const { return t_[std::min(p_ + ahead, t_.size() - 1)]; }
  const Token& next() { return t_[std::min(p_++, t_.size() - 1)]; }
  bool at_op(const char* op) const { return peek().kind == Tok::kOp && peek().value == op; }
  bool at_name(const char* n) const { return peek().kind == Tok::kName && peek().value == n; }
  bool accept_op(const char* op) {
    if (!at_op(op)) return false;
    ++p_;
    return true;
  }
  bool accept_name(const char* n) {
    if (!at_name(n)) return false;
    ++p_;
    return true;
  }
  void expect_op(const char* op) {
    if (!accept_op(op))
      fail(peek().line, std::string("expected '") + op + "', got " + describe(peek()));
  }
  std::string expect_name() {
    if (peek().kind != Tok::kName) fail(peek().line, "expected a name, got " + describe(peek()));
    return next().value;
  }
  void expect_block_end() {
    if (peek().kind != Tok::kBlockEnd) {
      fail(peek().line, "expected the end of the statement ('%}'), got " + describe(peek()));
    }
    ++p_;
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case Tok::kEnd:
        return "the end of the template";
      case Tok::kBlockEnd:
        return "'%}'";
      case Tok::kVarEnd:
        return "'}}'";
      case Tok::kText:
        return "template text";
      case Tok::kString:
        return "a string";
      default:
        return "'" + t.value + "'";
    }
  }

  ExprPtr make(Expr::Kind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }

  // ----- statements -----
  Body parse_body(const std::set<std::string>& ends, std::string& hit) {
    Body body;
    while (true) {
      const Token& tok = peek();
      if (tok.kind == Tok::kEnd) {
        if (!ends.empty()) {
          std::string closer = *ends.rbegin();  // endif, endfor, endset, ... sort last
          fail(tok.line, "unexpected end of template: '{% " + closer + " %}' is missing");
        }
        return body;
      }
      if (tok.kind == Tok::kText) {
        auto n = node(Node::Kind::kText, tok.line);
        n->text = next().value;
        body.push_back(std::move(n));
      } else if (tok.kind == Tok::kVarBegin) {
        ++p_;
        auto n = node(Node::Kind::kOutput, tok.line);
        n->exprs.push_back(parse_expr());
        if (peek().kind != Tok::kVarEnd)
          fail(peek().line, "expected '}}', got " + describe(peek()));
        ++p_;
        body.push_back(std::move(n));
      } else {
        ++p_;  // {%
        const Token& kw = peek();
        if (kw.kind != Tok::kName) fail(kw.line, "expected a statement name, got " + describe(kw));
        if (ends.count(kw.value)) {
          hit = next().value;
          return body;
        }
        body.push_back(parse_statement());
      }
    }
  }

  NodePtr node(Node::Kind kind, int line) {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    n->line = line;
    return n;
  }

  NodePtr parse_statement() {
    const Token& kw = next();
    const std::string& k = kw.value;
    if (k == "if") return parse_if(kw.line);
    if (k == "for") return parse_for(kw.line);
    if (k == "set") return parse_set(kw.line);
    if (k == "macro") return parse_macro(kw.line);
    if (k == "break" || k == "continue") {
      expect_block_end();
      return node(k == "break" ? Node::Kind::kBreak : Node::Kind::kContinue, kw.line);
    }
    if (k == "generation") {
      expect_block_end();
      auto n = node(Node::Kind::kGeneration, kw.line);
      std::string hit;
      n->bodies.push_back(parse_body({"endgeneration"}, hit));
      expect_block_end();
      return n;
    }
    fail(kw.line, "unsupported statement '{% " + k + " %}'");
  }

  NodePtr parse_if(int line) {
    auto n = node(Node::Kind::kIf, line);
    n->exprs.push_back(parse_expr());
    expect_block_end();
    while (true) {
      std::string hit;
      n->bodies.push_back(parse_body({"elif", "else", "endif"}, hit));
      if (hit == "elif") {
        n->exprs.push_back(parse_expr());
        expect_block_end();
      } else if (hit == "else") {
        expect_block_end();
        std::string end;
        n->bodies.push_back(parse_body({"endif"}, end));
        expect_block_end();
        return n;
      } else {
        expect_block_end();
        return n;
      }
    }
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> names{expect_name()};
    while (accept_op(",")) names.push_back(expect_name());
    return names;
  }

  NodePtr parse_for(int line) {
    auto n = node(Node::Kind::kFor, line);
    bool paren = accept_op("(");
    n->names = parse_targets();
    if (paren) expect_op(")");
    if (!accept_name("in"))
      fail(peek().line, "expected 'in' in the for statement, got " + describe(peek()));
    n->exprs.push_back(parse_cond_free_expr());
    n->exprs.push_back(accept_name("if") ? parse_expr() : nullptr);
    if (at_name("recursive")) fail(peek().line, "unsupported: recursive for loops");
    expect_block_end();
    std::string hit;
    n->bodies.push_back(parse_body({"else", "endfor"}, hit));
    if (hit == "else") {
      expect_block_end();
      n->bodies.push_back(parse_body({"endfor"}, hit));
    }
    expect_block_end();
    return n;
  }

  NodePtr parse_set(int line) {
    auto n = node(Node::Kind::kSet, line);
    n->names.push_back(expect_name());
    if (accept_op(".")) {
      n->attr = expect_name();
    } else {
      while (accept_op(",")) n->names.push_back(expect_name());
    }
    if (peek().kind == Tok::kBlockEnd && n->names.size() == 1 && n->attr.empty()) {
      ++p_;
      n->kind = Node::Kind::kSetBlock;
      std::string hit;
      n->bodies.push_back(parse_body({"endset"}, hit));
      expect_block_end();
      return n;
    }
    expect_op("=");
    n->exprs.push_back(parse_tuple_or_expr());
    expect_block_end();
    return n;
  }

  NodePtr parse_macro(int line) {
    auto n = node(Node::Kind::kMacro, line);
    n->names.push_back(expect_name());
    expect_op("(");
    while (!accept_op(")")) {
      if (n->names.size() > 1) expect_op(",");
      if (accept_op(")")) break;
      n->names.push_back(expect_name());
      n->exprs.push_back(accept_op("=") ? parse_expr() : nullptr);
    }
    expect_block_end();
    std::string hit;
    n->bodies.push_back(parse_body({"endmacro"}, hit));
    expect_block_end();
    return n;
  }

  // ----- expressions -----
  // `a, b` without brackets (set's right side) is a tuple.
  ExprPtr parse_tuple_or_expr() {
    int line = peek().line;
    ExprPtr first = parse_expr();
    if (!at_op(",")) return first;
    auto tup = make(Expr::Kind::kTuple, line);
    tup->kids.push_back(std::move(first));
    while (accept_op(",")) {
      if (peek().kind == Tok::kBlockEnd) break;
      tup->kids.push_back(parse_expr());
    }
    return tup;
  }

 public:
  ExprPtr parse_expr() {
    ExprPtr e = parse_or();
    while (at_name("if")) {
      int line = next().line;
      auto c = make(Expr::Kind::kCond, line);
      c->kids.push_back(std::move(e));
      c->kids.push_back(parse_or());
      c->kids.push_back(accept_name("else") ? parse_expr() : nullptr);
      e = std::move(c);
    }
    return e;
  }

 private:
  // A for loop's iterable: `if` there starts the loop filter, not a conditional expression.
  ExprPtr parse_cond_free_expr() { return parse_or(); }

  ExprPtr binary(const std::string& op, ExprPtr a, ExprPtr b, int line) {
    auto e = make(Expr::Kind::kBinary, line);
    e->name = op;
    e->kids.push_back(std::move(a));
    e->kids.push_back(std::move(b));
    return e;
  }

  // One left-associative level of Jinja's grammar: operand (op operand)*, `op` one of `ops`
  // (keywords when `keyword`, else operator symbols), each step a kBinary node named `op`.
  ExprPtr left_assoc(std::initializer_list<const char*> ops, bool keyword,
                     ExprPtr (Parser::*operand)()) {
    ExprPtr e = (this->*operand)();
    while (true) {
      const char* op = nullptr;
      for (const char* o : ops)
        if (keyword ? at_name(o) : at_op(o)) op = o;
      if (op == nullptr) return e;
      int line = next().line;
      e = binary(op, std::move(e), (this->*operand)(), line);
    }
  }

  ExprPtr parse_or() { return left_assoc({"or"}, true, &Parser::parse_and); }
  ExprPtr parse_and() { return left_assoc({"and"}, true, &Parser::parse_not); }
  ExprPtr parse_not() {
    if (at_name("not")) {
      auto e = make(Expr::Kind::kUnary, next().line);
      e->name = "not";
      e->kids.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    int line = peek().line;
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      static const char* const kOps[] = {"==", "!=", "<", "<=", ">", ">="};
      for (const char* o : kOps) {
        if (at_op(o)) op = o;
      }
      if (!op.empty()) {
        ++p_;
      } else if (accept_name("in")) {
        op = "in";
      } else if (at_name("not") && peek(1).kind == Tok::kName && peek(1).value == "in") {
        p_ += 2;
        op = "notin";
      } else {
        break;
      }
      if (!cmp) {
        cmp = make(Expr::Kind::kCompare, line);
        cmp->kids.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->kids.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }
  ExprPtr parse_math1() { return left_assoc({"+", "-"}, false, &Parser::parse_concat); }
  ExprPtr parse_concat() { return left_assoc({"~"}, false, &Parser::parse_math2); }
  ExprPtr parse_math2() { return left_assoc({"*", "/", "//", "%"}, false, &Parser::parse_pow); }
  ExprPtr parse_unary_filtered() { return parse_unary(true); }
  ExprPtr parse_pow() { return left_assoc({"**"}, false, &Parser::parse_unary_filtered); }
  // Jinja: a sign applies to the operand before its filters (`-3 | abs` is abs(-3)).
  ExprPtr parse_unary(bool with_filter = true) {
    ExprPtr node;
    if (at_op("-") || at_op("+")) {
      const Token& op = next();
      node = make(Expr::Kind::kUnary, op.line);
      node->name = op.value;
      node->kids.push_back(parse_unary(false));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    return with_filter ? parse_filters(std::move(node)) : std::move(node);
  }

  ExprPtr parse_primary() {
    const Token& tok = next();
    switch (tok.kind) {
      case Tok::kName: {
        const std::string& v = tok.value;
        auto lit = make(Expr::Kind::kLiteral, tok.line);
        if (v == "true" || v == "True")
          lit->literal = true;
        else if (v == "false" || v == "False")
          lit->literal = false;
        else if (v == "none" || v == "None")
          lit->literal = NoneType{};
        else {
          lit->kind = Expr::Kind::kName;
          lit->name = v;
        }
        return lit;
      }
      case Tok::kString: {
        auto lit = make(Expr::Kind::kLiteral, tok.line);
        std::string s = tok.value;
        while (peek().kind == Tok::kString) s += next().value;  // adjacent literals join
        lit->literal = s;
        return lit;
      }
      case Tok::kInt: {
        auto lit = make(Expr::Kind::kLiteral, tok.line);
        lit->literal = static_cast<int64_t>(std::stoll(tok.value));
        return lit;
      }
      case Tok::kFloat: {
        auto lit = make(Expr::Kind::kLiteral, tok.line);
        lit->literal = std::stod(tok.value);
        return lit;
      }
      case Tok::kOp:
        if (tok.value == "(") return parse_paren(tok.line);
        if (tok.value == "[") return parse_list(tok.line);
        if (tok.value == "{") return parse_dict(tok.line);
        [[fallthrough]];
      default:
        fail(tok.line, "unexpected " + describe(tok) + " in an expression");
    }
  }

  ExprPtr parse_paren(int line) {
    if (accept_op(")")) return make(Expr::Kind::kTuple, line);
    ExprPtr e = parse_expr();
    if (accept_op(")")) return e;
    auto tup = make(Expr::Kind::kTuple, line);
    tup->kids.push_back(std::move(e));
    while (accept_op(",")) {
      if (at_op(")")) break;
      tup->kids.push_back(parse_expr());
    }
    expect_op(")");
    return tup;
  }
  ExprPtr parse_list(int line) {
    auto e = make(Expr::Kind::kList, line);
    while (!accept_op("]")) {
      if (!e->kids.empty()) expect_op(",");
      if (accept_op("]")) break;
      e->kids.push_back(parse_expr());
    }
    return e;
  }
  ExprPtr parse_dict(int line) {
    auto e = make(Expr::Kind::kDict, line);
    while (!accept_op("}")) {
      if (!e->kids.empty()) expect_op(",");
      if (accept_op("}")) break;
      e->kids.push_back(parse_expr());
      expect_op(":");
      e->kids.push_back(parse_expr());
    }
    return e;
  }

  void parse_call_args(Expr& e) {
    while (!accept_op(")")) {
      if (e.kids.size() > 1 || !e.kw_names.empty()) expect_op(",");
      if (accept_op(")")) break;
      if (peek().kind == Tok::kName && peek(1).kind == Tok::kOp && peek(1).value == "=") {
        e.kw_names.push_back(next().value);
        ++p_;
        e.kids.push_back(parse_expr());
      } else {
        if (!e.kw_names.empty()) fail(peek().line, "positional argument after a keyword argument");
        e.kids.push_back(parse_expr());
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr obj, int line) {
    ExprPtr parts[3];
    int part = 0;
    bool slice = false;
    while (!accept_op("]")) {
      if (accept_op(":")) {
        slice = true;
        if (++part > 2) fail(line, "a slice has at most 3 parts");
        continue;
      }
      if (parts[part])
        fail(peek().line, "expected ':' or ']' in a subscript, got " + describe(peek()));
      parts[part] = parse_expr();
    }
    if (!slice) {
      if (!parts[0]) fail(line, "empty subscript '[]'");
      auto e = make(Expr::Kind::kItem, line);
      e->kids.push_back(std::move(obj));
      e->kids.push_back(std::move(parts[0]));
      return e;
    }
    auto e = make(Expr::Kind::kSlice, line);
    e->kids.push_back(std::move(obj));
    for (auto& p : parts) e->kids.push_back(std::move(p));
    return e;
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      int line = peek().line;
      if (accept_op(".")) {
        auto a = make(Expr::Kind::kAttr, line);
        if (peek().kind == Tok::kInt) {
          a->kind = Expr::Kind::kItem;
          a->kids.push_back(std::move(e));
          auto idx = make(Expr::Kind::kLiteral, line);
          idx->literal = static_cast<int64_t>(std::stoll(next().value));
          a->kids.push_back(std::move(idx));
        } else {
          a->name = expect_name();
          a->kids.push_back(std::move(e));
        }
        e = std::move(a);
      } else if (accept_op("[")) {
        e = parse_subscript(std::move(e), line);
      } else if (accept_op("(")) {
        auto c = make(Expr::Kind::kCall, line);
        c->kids.push_back(std::move(e));
        parse_call_args(*c);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_filters(ExprPtr e) {
    while (true) {
      int line = peek().line;
      if (accept_op("|")) {
        auto f = make(Expr::Kind::kFilter, line);
        f->name = expect_name();
        if (!is_filter(f->name)) fail(line, "unsupported filter '" + f->name + "'");
        f->kids.push_back(std::move(e));
        if (accept_op("(")) parse_call_args(*f);
        e = std::move(f);
      } else if (accept_name("is")) {
        auto t = make(Expr::Kind::kTest, line);
        t->negated = accept_name("not");
        t->name = expect_name();
        if (!is_test(t->name)) fail(line, "unsupported test '" + t->name + "'");
        t->kids.push_back(std::move(e));
        if (accept_op("(")) {
          parse_call_args(*t);
        } else if (starts_test_arg()) {
          t->kids.push_back(parse_postfix(parse_primary()));
        }
        e = std::move(t);
      } else if (accept_op("(")) {
        auto c = make(Expr::Kind::kCall, line);
        c->kids.push_back(std::move(e));
        parse_call_args(*c);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  // Jinja: `x is divisibleby 3` takes one argument without parentheses when the next token
  // can start one and is not `else`, `or` or `and`.
  bool starts_test_arg() const {
    const Token& t = peek();
    if (t.kind == Tok::kName)
      return t.value != "else" && t.value != "or" && t.value != "and" && t.value != "if" &&
             t.value != "not" && t.value != "in";
    if (t.kind == Tok::kString || t.kind == Tok::kInt || t.kind == Tok::kFloat) return true;
    return t.kind == Tok::kOp && (t.value == "[" || t.value == "{");
  }

  const std::vector<Token>& t_;
  const std::string& name_;
  size_t p_ = 0;
};

}  // namespace

Body parse(const std::vector<Token>& tokens, const std::string& name) {
  return Parser(tokens, name).parse_template();
}

}  // namespace loom::jinja
