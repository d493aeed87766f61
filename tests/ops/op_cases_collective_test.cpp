// Op test cases of the collectives (all_reduce). The op tests run in one
// process, so the group is the one-rank group: all_reduce is the identity
// there (sum and mean over one rank), which the forward tests check on every
// backend against the reference, and its gradient is the identity too
// (finite differences). Several ranks are tested under mpirun (tests/distributed/).
#include "loom/collective.h"
#include "ops/op_cases.h"

namespace loom::optest {

void add_collective_cases(std::vector<OpCase>& t) {
  struct Spec {
    const char* name;
    Shape shape;
    dist::ReduceOp op;
  };
  for (const Spec& s : std::vector<Spec>{{"sum_rows_13", {3, 13}, dist::ReduceOp::sum},
                                         {"mean_rank0", {}, dist::ReduceOp::mean},
                                         {"sum_empty", {0, 5}, dist::ReduceOp::sum},
                                         {"mean_rank3", {2, 1, 7}, dist::ReduceOp::mean}}) {
    Shape shape = s.shape;
    dist::ReduceOp op = s.op;
    ops::Attrs attrs;
    attrs.index = op == dist::ReduceOp::mean ? 1 : 0;
    t.push_back({.op = ops::OpKind::k_all_reduce,
                 .name = s.name,
                 .dtypes = kNumeric,
                 .make = [shape](CaseEnv& e) -> Inputs { return {e.data(shape)}; },
                 .run = [op](const Inputs& in, const CaseEnv&) { return all_reduce(in[0], op); },
                 .grad = numel(shape) > 0,
                 .attrs = attrs});
  }
}

}  // namespace loom::optest
