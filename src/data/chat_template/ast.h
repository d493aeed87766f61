// The chat-template syntax tree: expressions (Expr) and statements (Node), each with the
// source line it came from, so an evaluation error can name it.
// Assumes: built only by parser.cpp, read only by evaluator.cpp; the field meanings per kind
// are listed on each enum value.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/chat_template/value.h"

namespace loom::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,  // literal
    kName,     // name
    kList,     // kids: items
    kTuple,    // kids: items (a tuple evaluates to a list)
    kDict,     // kids: key, value, key, value, ...
    kAttr,     // kids[0].name
    kItem,     // kids[0][kids[1]]
    kSlice,    // kids[0][kids[1]:kids[2]:kids[3]] (null kid: omitted)
    kCall,     // kids[0](kids[1..]); the last kw_names.size() args are keyword args
    kFilter,   // kids[0] | name(kids[1..]); kw_names as for kCall
    kTest,     // kids[0] is [not] name(kids[1..]); negated
    kUnary,    // name ("-", "+", "not") kids[0]
    kBinary,   // kids[0] name kids[1]: + - * / // % ** ~ and or
    kCompare,  // kids[0] ops[0] kids[1] ops[1] kids[2] ...: == != < <= > >= in notin
    kCond,     // kids[0] if kids[1] else kids[2] (kids[2] null: undefined)
  };
  Kind kind;
  int line;
  Value literal;
  std::string name;
  std::vector<ExprPtr> kids;
  std::vector<std::string> kw_names;
  std::vector<std::string> ops;
  bool negated = false;
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  enum class Kind {
    kText,        // text
    kOutput,      // {{ exprs[0] }}
    kIf,          // if exprs[i]: bodies[i]; bodies.size() > exprs.size(): the last is else
    kFor,         // for names in exprs[0] [if exprs[1]]: bodies[0] else bodies[1]
    kSet,         // set names (tuple unpacking) = exprs[0]; attr: set names[0].attr = ...
    kSetBlock,    // set names[0] %} bodies[0] {% endset
    kMacro,       // macro names[0](names[1..]) with defaults exprs (null: none): bodies[0]
    kBreak,       // break
    kContinue,    // continue
    kGeneration,  // generation %} bodies[0] {% endgeneration (transformers' extension)
  };
  Kind kind;
  int line;
  std::string text;
  std::string attr;
  std::vector<std::string> names;
  std::vector<ExprPtr> exprs;
  std::vector<Body> bodies;
};

}  // namespace loom::jinja
