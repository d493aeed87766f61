// IR text printer and parser (round trip), used by LOOM_DUMP_IR, the
// on-disk compile cache and the pass tests.
#include <sstream>

#include "ir/graph.h"
#include "loom/error.h"

namespace loom::ir {

std::string to_text(const Graph& g) {
  std::ostringstream out;
  out << "graph(";
  for (size_t i = 0; i < g.inputs.size(); ++i)
    out << (i ? ", " : "") << '%' << i << ": " << ops::to_string(g.inputs[i]);
  out << ") {\n";
  int id = static_cast<int>(g.inputs.size());
  for (const Instr& in : g.instrs) {
    out << "  %" << id++ << " = " << ops::op_name(in.op) << '(';
    for (size_t i = 0; i < in.operands.size(); ++i) out << (i ? ", " : "") << '%' << in.operands[i];
    out << ')';
    std::string attrs = ops::to_string(in.attrs);
    if (!attrs.empty()) out << ' ' << attrs;
    if (in.remat != 0) out << " remat=" << in.remat;
    out << " : " << ops::to_string(in.type) << '\n';
  }
  out << "  return (";
  for (size_t i = 0; i < g.outputs.size(); ++i) out << (i ? ", " : "") << '%' << g.outputs[i];
  out << ")\n}\n";
  return out.str();
}

namespace {

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  Graph run() {
    Graph g;
    expect("graph(");
    while (!try_eat(")")) {
      value_id();
      expect(":");
      g.inputs.push_back(type());
      try_eat(",");
    }
    expect("{");
    while (!try_eat("return")) {
      value_id();
      expect("=");
      g.instrs.push_back(instr());
    }
    expect("(");
    while (!try_eat(")")) {
      g.outputs.push_back(value_id());
      try_eat(",");
    }
    expect("}");
    return g;
  }

 private:
  [[noreturn]] void error(const std::string& what) {
    int line = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) line += text_[i] == '\n';
    fail("[ir] line ", line, ": ", what);
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool try_eat(std::string_view s) {
    skip_space();
    if (text_.compare(pos_, s.size(), s) != 0) return false;
    pos_ += s.size();
    return true;
  }
  void expect(std::string_view s) {
    if (!try_eat(s)) error("expected '" + std::string(s) + "'");
  }
  std::string word() {
    skip_space();
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                   text_[pos_] == '_' || text_[pos_] == '.' ||
                                   text_[pos_] == '-' || text_[pos_] == '+'))
      ++pos_;
    if (start == pos_) error("expected a word");
    return text_.substr(start, pos_ - start);
  }
  int64_t integer() {
    std::string w = word();
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(w, &used);
    } catch (...) {
    }
    if (used == 0 || used != w.size()) error("bad integer '" + w + "'");
    return v;
  }
  int value_id() {
    expect("%");
    return static_cast<int>(integer());
  }
  std::vector<int64_t> int_list() {
    expect("[");
    std::vector<int64_t> v;
    while (!try_eat("]")) {
      v.push_back(integer());
      try_eat(",");
    }
    return v;
  }
  ops::TensorType type() {
    std::string name = word();
    ops::TensorType t;
    t.dtype = name == "f32"    ? DType::f32
              : name == "bool" ? DType::boolean
                               : dtype_from_name(name);
    t.shape = int_list();
    return t;
  }
  void read(int64_t& v) { v = integer(); }
  void read(double& v) {
    std::string w = word();
    size_t used = 0;
    try {
      v = std::stod(w, &used);
    } catch (...) {
    }
    if (used == 0 || used != w.size()) error("bad number '" + w + "'");
  }
  void read(bool& v) {
    std::string w = word();
    if (w != "true" && w != "false") error("bad bool '" + w + "' (true or false)");
    v = w == "true";
  }
  void read(DType& v) { v = dtype_from_name(word()); }
  void read(std::vector<int64_t>& v) { v = int_list(); }
  // key=value for any field of attrs.def (ops::for_each_attr).
  void attr(ops::Attrs& a, const std::string& key) {
    expect("=");
    bool found = false;
    ops::for_each_attr(a, [&](const char* name, auto& value, const auto&) {
      if (found || key != name) return;
      found = true;
      read(value);
    });
    if (!found) error("unknown attribute '" + key + "'");
  }
  Instr instr() {
    Instr in;
    in.op = ops::op_from_name(word());
    expect("(");
    while (!try_eat(")")) {
      in.operands.push_back(value_id());
      try_eat(",");
    }
    while (!try_eat(":")) {
      std::string key = word();
      if (key == "remat") {
        expect("=");
        in.remat = static_cast<int>(integer());
      } else {
        attr(in.attrs, key);
      }
    }
    in.type = type();
    return in;
  }

  const std::string& text_;
  size_t pos_ = 0;
};

}  // namespace

Graph parse(const std::string& text) { return Parser(text).run(); }

}  // namespace loom::ir
