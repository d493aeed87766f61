// MemoryPlan: the static buffer assignment of one Program, computed before
// anything runs (DESIGN.md "Backends, executables and memory").
//
// Every value gets one placement:
//   input  — a graph input: the caller's buffer (also a graph output that is
//            an input passed through);
//   arena  — an intermediate: `offset` bytes into the executable's one arena,
//            which lives as long as the executable (a steady-state step
//            allocates nothing for intermediates);
//   output — a graph output: its own buffer, because it outlives the step;
//            taken from the input named by `donor` (donation: the input's
//            tensor is being overwritten, e.g. a parameter or optimizer
//            state) when the run time allows it, else freshly allocated;
//   none   — never materialized (fused away).
// Live ranges are step indices: a value lives from the step that writes it
// through the last step that reads it. A kernel's output never aliases its
// inputs, except in a fused elementwise step, whose output may take the
// buffer of an input of the same type that dies there (each element is read
// before it is written: backends::FusedCall) — the in-place reuses, listed;
// so may an index_add's output take its base's (the kernels read the base
// before writing) and an index_copy's its self's (the cpu kernel then
// copies only the indexed slices: a donated KV cache gets one row a step).
// A reshape step whose input and output are both arena values is an alias:
// the output shares the input's buffer and the step runs no kernel
// (`alias_steps`); so is a contiguous slice (step 1, every axis before the
// sliced one of size 1, a 64-byte-aligned start), whose offset is its
// input's plus the start's bytes. A buffer holding slice views is written
// in place only through a view that dies at the step, is the step's one
// input in that buffer, and whose bytes no value read later overlaps.
// The run time may veto a donation (the input is still referenced
// elsewhere) and then allocates; it never donates what the plan did not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/program.h"

namespace loom::compiler::memory {

enum class Placement : uint8_t { none, input, arena, output };

/// Step `step` writes value `output` over value `input` (same type).
struct InPlace {
  int step = -1;
  int output = -1;
  int input = -1;
};

struct MemoryPlan {
  std::vector<Placement> placement;  // per value
  std::vector<size_t> offset;        // per value: arena offset in bytes (arena values)
  std::vector<int> first, last;      // per value: live steps (-1 when not materialized)
  size_t arena_bytes = 0;
  /// Per graph input: the value id of the graph output it is donated to, or -1.
  std::vector<int> donated_to;
  /// Per value: the graph input whose buffer this output takes, or -1.
  std::vector<int> donor;
  std::vector<InPlace> in_place;
  /// Steps (reshapes) whose output is planned onto their input's bytes: not run.
  std::vector<int> alias_steps;
  size_t output_bytes = 0;   // graph outputs with their own buffer (no donor)
  size_t donated_bytes = 0;  // graph outputs planned into donated inputs
  /// Bytes the executable allocates per run at most: arena + undonated outputs.
  size_t planned_peak_bytes() const { return arena_bytes + output_bytes; }
  /// One line: "arena 1.2 MiB, outputs 3.4 MiB, donated 5.6 MiB, 7 in-place, 2 aliased".
  std::string summary() const;
};

/// Plans `program`'s memory: live ranges over its steps, in-place reuse in
/// fused steps, the donation table, then arena offsets (arena.h).
MemoryPlan plan_memory(const Program& program);

}  // namespace loom::compiler::memory
