// ir::Graph: one traced step as a flat SSA program. Values 0..num_inputs-1
// are the graph's inputs (device data: parameters, batches, scalars,
// generator states); each Instr defines the next value. Instrs are in
// topological (post-) order; `outputs` lists the values the step returns.
//
//   graph(%0: f32[4,8], %1: f32[]) {
//     %2 = mul(%0, %1) : f32[4,8]
//     %3 = sum(%2) axes=[1] : f32[4]
//     return (%3)
//   }
//
// The structural hash covers op kinds, attributes, types and topology —
// never the values of the inputs — so a step re-traced with new data hashes
// the same.
#pragma once

#include <string>
#include <vector>

#include "core/hash.h"
#include "ops/attrs.h"
#include "ops/op_kind.h"

namespace loom::ir {

struct Instr {
  ops::OpKind op;
  ops::Attrs attrs;
  std::vector<int> operands;  // value ids
  ops::TensorType type;
  // Gradient checkpointing mark (compiler/passes/remat.cpp, docs/remat.md): 0 none;
  // k > 0 traced in the forward of checkpointed layer call k (numbered 1, 2, ... in graph
  // order by collect); -1 traced by backward() in a step with checkpointed layers. Printed
  // as `remat=k`; in graph_hash when nonzero, never in instr_hash (CSE ignores it).
  int remat = 0;
};

struct Graph {
  std::vector<ops::TensorType> inputs;
  std::vector<Instr> instrs;
  std::vector<int> outputs;

  int num_values() const { return static_cast<int>(inputs.size() + instrs.size()); }
  bool is_input(int value) const { return value < static_cast<int>(inputs.size()); }
  const ops::TensorType& type_of(int value) const;
  /// Instr defining `value` (must not be an input).
  const Instr& instr_of(int value) const { return instrs[value - inputs.size()]; }
};

/// Structural hash (op kinds, attributes, types, operand wiring, outputs).
Hash128 graph_hash(const Graph& graph);
/// Hash of one instr's op, attributes and type (not its operands).
Hash128 instr_hash(const Instr& instr);

/// Readable text form (see the example above); round-trips through parse().
std::string to_text(const Graph& graph);
/// Parses to_text() output; throws loom::Error "[ir] line N: ..." on bad text.
Graph parse(const std::string& text);

/// Checks operand ids precede their use, types match infer_type, outputs
/// exist; throws loom::Error "[verifier] ..." naming the instr.
void verify(const Graph& graph);

}  // namespace loom::ir
