// ops::Attrs is generated from ops/attrs.def: every field must print to IR
// text and parse back to the same value, and change the instruction hash
// (the compile-cache key) on its own. The loops run over attrs.def itself, so
// a new field is covered without touching this file.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "ir/graph.h"
#include "loom/error.h"

namespace loom::ops {
namespace {

// A non-default value of each attribute type (0.1 has no short decimal
// form: the printer must keep every digit).
void set_sample(int64_t& v) { v = -7; }
void set_sample(double& v) { v = 0.1; }
void set_sample(bool& v) { v = true; }
void set_sample(DType& v) { v = DType::bf16; }
void set_sample(std::vector<int64_t>& v) { v = {3, -1, 0}; }

std::vector<std::string> field_names() {
  std::vector<std::string> names;
  Attrs a;
  for_each_attr(a, [&](const char* name, auto&, const auto&) { names.push_back(name); });
  return names;
}

// Default attrs except field `index` (attrs.def order) set to its sample.
Attrs with_field(size_t index) {
  Attrs a;
  size_t i = 0;
  for_each_attr(a, [&](const char*, auto& value, const auto&) {
    if (i++ == index) set_sample(value);
  });
  return a;
}

ir::Graph one_instr(const Attrs& a) {
  ir::Graph g;
  g.inputs = {{{4}, DType::f32}};
  g.instrs.push_back({OpKind::k_relu, a, {0}, {{4}, DType::f32}});
  g.outputs = {1};
  return g;
}

Attrs round_trip(const Attrs& a) { return ir::parse(ir::to_text(one_instr(a))).instrs.at(0).attrs; }

TEST(IrAttrs, FieldNamesAreUnique) {
  std::vector<std::string> names = field_names();
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  EXPECT_GE(names.size(), 25u);
}

TEST(IrAttrs, EveryFieldRoundTripsThroughIrText) {
  std::vector<std::string> names = field_names();
  for (size_t i = 0; i < names.size(); ++i) {
    Attrs a = with_field(i);
    ASSERT_FALSE(a == Attrs{}) << names[i];
    std::string text = to_string(a);
    EXPECT_EQ(text.rfind(names[i] + "=", 0), 0u) << text;
    EXPECT_EQ(text.find(' '), std::string::npos) << "only " << names[i] << " printed: " << text;
    EXPECT_TRUE(round_trip(a) == a) << text;
  }
  EXPECT_EQ(to_string(Attrs{}), "");
}

TEST(IrAttrs, AllFieldsAtOnceRoundTrip) {
  Attrs all;
  for_each_attr(all, [](const char*, auto& value, const auto&) { set_sample(value); });
  std::string text = to_string(all);
  for (const std::string& name : field_names())
    EXPECT_NE(text.find(name + "="), std::string::npos) << name << " missing from " << text;
  EXPECT_TRUE(round_trip(all) == all) << text;
}

TEST(IrAttrs, DoublesKeepEveryBitIncludingNegativeZero) {
  for (double v : {-0.0, 1e-300, -1.0 / 3.0, 6.02214076e23}) {
    Attrs a;
    a.fill_value = v;
    Attrs back = round_trip(a);
    EXPECT_EQ(std::signbit(back.fill_value), std::signbit(v)) << to_string(a);
    EXPECT_EQ(back.fill_value, v) << to_string(a);
  }
}

TEST(IrAttrs, EachFieldChangesTheHashOnItsOwn) {
  std::vector<std::string> names = field_names();
  std::set<std::string> hashes = {ir::instr_hash(one_instr(Attrs{}).instrs[0]).hex()};
  for (size_t i = 0; i < names.size(); ++i) {
    // Fields of one type get the same sample value: only the name tells
    // ignore_index=-7 from num_classes=-7, so they must still differ.
    std::string h = ir::instr_hash(one_instr(with_field(i)).instrs[0]).hex();
    EXPECT_TRUE(hashes.insert(h).second) << names[i] << " hashes like another field or none";
  }
  Attrs neg_zero;
  neg_zero.fill_value = -0.0;
  EXPECT_NE(ir::instr_hash(one_instr(neg_zero).instrs[0]).hex(),
            ir::instr_hash(one_instr(Attrs{}).instrs[0]).hex());
}

TEST(IrAttrs, OldAndBadKeysAreRejected) {
  auto parse_attr = [](const std::string& attr) {
    ir::parse("graph(%0: f32[4]) {\n  %1 = relu(%0) " + attr + " : f32[4]\n  return (%1)\n}\n");
  };
  // The keys of compile-cache format 2: such a file must not parse.
  for (const char* old : {"scalar=1", "scalar2=1", "index=2", "end=3"}) {
    std::string key(old, std::string(old).find('='));
    try {
      parse_attr(old);
      ADD_FAILURE() << old << " parsed";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("unknown attribute '" + key + "'"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(parse_attr("keepdim=yes"), Error);
  EXPECT_THROW(parse_attr("eps=abc"), Error);
  EXPECT_THROW(parse_attr("axis=1.5x"), Error);
}

}  // namespace
}  // namespace loom::ops
