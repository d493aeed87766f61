// lower_to_stablehlo: the module around the per-op lowerings (lower_ops.h),
// the set of op kinds it handles, and the LOOM_DUMP_IR hook. Composite ops
// (softmax, log_softmax, layer_norm, cross_entropy, cross_entropy_backward,
// attention, fused_linear_cross_entropy) are left out of lowered_ops(), so
// the generic decompose pass rewrites them into ops lowered here (XLA fuses
// the result), and fused_cross_entropy never creates
// fused_linear_cross_entropy for xla. Collectives (kCollective) are never
// lowered: xla-runtime splits a graph at them first.
#include "backends/xla/lower/stablehlo.h"

#include <cstdlib>
#include <fstream>

#include "backends/xla/lower/lower_ops.h"
#include "core/settings.h"
#include "loom/error.h"

namespace loom::backends::xla {

using ops::OpKind;

namespace {

bool stablehlo_lowers(OpKind op) {
  uint32_t t = ops::op_traits(op);
  if (t & (ops::kCollective | ops::kComposite)) return false;
  return true;  // every primitive op, and attention_backward (no decomposition exists)
}

Val stablehlo_lower_instr(HloEmitter& e, const ir::Instr& in, const std::vector<Val>& args) {
  uint32_t t = ops::op_traits(in.op);
  if (in.op == OpKind::k_attention_backward) return lower_attention_backward(e, in, args);
  if (t & ops::kRandom) return lower_random(e, in, args);
  if (t & ops::kReduce) return lower_reduce(e, in, args);
  if (t & ops::kMatmul) return lower_matmul(e, in, args);
  if (t & ops::kShape) return lower_shape(e, in, args);
  if (t & ops::kIndex) return lower_index(e, in, args);
  return lower_elementwise(e, in, args);
}

std::string stablehlo_results(const std::vector<Val>& vals, const std::vector<int>& outputs) {
  std::string s;
  for (size_t i = 0; i < outputs.size(); ++i) s += (i ? ", " : "") + tensor_type(vals[outputs[i]]);
  return s;
}

void stablehlo_dump(const ir::Graph& graph, const std::string& name, const std::string& text) {
  const std::string& dir = settings::text(Setting::dump_ir);
  if (dir.empty()) return;
  std::string prefix = dir + "/" + ir::graph_hash(graph).hex() + "." + name;
  std::ofstream(prefix + ".ir") << ir::to_text(graph);
  std::ofstream(prefix + ".mlir") << text;
}

}  // namespace

std::bitset<ops::kNumOps> lowered_ops() {
  std::bitset<ops::kNumOps> ops;
  for (int k = 0; k < ops::kNumOps; ++k)
    if (stablehlo_lowers(OpKind(k))) ops.set(k);
  return ops;
}

std::string lower_to_stablehlo(const ir::Graph& graph, const LowerOptions& options) {
  std::vector<int> alias_of(graph.inputs.size(), -1);
  for (auto [input, output] : options.aliases) {
    LOOM_CHECK(input >= 0 && input < int(graph.inputs.size()) && output >= 0 &&
                   output < int(graph.outputs.size()),
               "[xla] alias (input ", input, ", output ", output, ") is out of range for ",
               graph.inputs.size(), " inputs and ", graph.outputs.size(), " outputs");
    LOOM_CHECK(graph.inputs[input] == graph.type_of(graph.outputs[output]), "[xla] alias (input ",
               input, ", output ", output, ") joins ", ops::to_string(graph.inputs[input]), " and ",
               ops::to_string(graph.type_of(graph.outputs[output])));
    alias_of[input] = output;
  }
  std::vector<Val> vals;
  std::string params;
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const ops::TensorType& t = graph.inputs[i];
    vals.push_back({"%arg" + std::to_string(i), t.shape, mlir_elem(t.dtype)});
    params += (i ? ", " : "") + vals.back().name + ": " + tensor_type(vals.back());
    if (alias_of[i] >= 0)
      params += " {tf.aliasing_output = " + std::to_string(alias_of[i]) + " : i32}";
  }
  HloEmitter e;
  for (const ir::Instr& in : graph.instrs) {
    LOOM_CHECK(stablehlo_lowers(in.op), "[xla] cannot lower ", ops::op_name(in.op),
               ops::has_trait(in.op, ops::kCollective)
                   ? " (a collective: the graph must be split at it before lowering)"
                   : " (a composite op: run the decompose pass for a backend without it)");
    std::vector<Val> args;
    for (int v : in.operands) args.push_back(vals[v]);
    e.comment(std::string(ops::op_name(in.op)) + " -> %v" + std::to_string(vals.size()) + " : " +
              ops::to_string(in.type));
    Val r = stablehlo_lower_instr(e, in, args);
    LOOM_CHECK(r.shape == in.type.shape && r.elem == mlir_elem(in.type.dtype),
               "[xla] internal: ", ops::op_name(in.op), " lowered to ", tensor_type(r),
               ", expected ", ops::to_string(in.type));
    vals.push_back(r);
  }
  std::string ret;
  for (size_t i = 0; i < graph.outputs.size(); ++i)
    ret += (i ? ", " : "") + vals[graph.outputs[i]].name;
  std::string results = stablehlo_results(vals, graph.outputs);
  std::string text = "module @loom_" + options.name +
                     " attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n"
                     "  func.func public @" +
                     options.name + "(" + params + ") -> (" + results + ") {\n" + e.body() +
                     "    return " + ret + (ret.empty() ? "" : " : ") + results + "\n  }\n}\n";
  stablehlo_dump(graph, options.name, text);
  return text;
}

}  // namespace loom::backends::xla
