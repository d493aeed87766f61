// Op test cases of the collectives (all_reduce, all_gather, reduce_scatter). The op tests run in
// one process, so the group is the one-rank group: all_reduce is the identity there (sum and mean
// over one rank), and so are all_gather and reduce_scatter (W = 1: one block), which the forward
// tests check on every backend against the reference, and its gradient is the identity too (finite
// differences). Several ranks are tested under mpirun (tests/distributed/).
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
    attrs.reduce_op = op == dist::ReduceOp::mean ? 1 : 0;
    t.push_back({.op = ops::OpKind::k_all_reduce,
                 .name = s.name,
                 .dtypes = kNumeric,
                 .make = [shape](CaseEnv& e) -> Inputs { return {e.data(shape)}; },
                 .run = [op](const Inputs& in, const CaseEnv&) { return all_reduce(in[0], op); },
                 .grad = numel(shape) > 0,
                 .attrs = attrs});
  }
  for (const Shape& shape : std::vector<Shape>{{3, 13}, {1}, {0, 5}, {2, 1, 7}}) {
    ops::Attrs gather_attrs;
    gather_attrs.world_size = 1;
    t.push_back(
        {.op = ops::OpKind::k_all_gather,
         .name = "rows_" + std::to_string(shape[0]) + "_rank" + std::to_string(shape.size()),
         .dtypes = kNumeric,
         .make = [shape](CaseEnv& e) -> Inputs { return {e.data(shape)}; },
         .run = [](const Inputs& in, const CaseEnv&) { return all_gather(in[0]); },
         .grad = numel(shape) > 0,
         .attrs = gather_attrs});
    for (dist::ReduceOp op : {dist::ReduceOp::sum, dist::ReduceOp::mean}) {
      ops::Attrs attrs;
      attrs.reduce_op = op == dist::ReduceOp::mean ? 1 : 0;
      attrs.world_size = 1;
      t.push_back(
          {.op = ops::OpKind::k_reduce_scatter,
           .name = std::string(dist::reduce_op_name(op)) + "_rows_" + std::to_string(shape[0]) +
                   "_rank" + std::to_string(shape.size()),
           .dtypes = kNumeric,
           .make = [shape](CaseEnv& e) -> Inputs { return {e.data(shape)}; },
           .run = [op](const Inputs& in, const CaseEnv&) { return reduce_scatter(in[0], op); },
           .grad = numel(shape) > 0,
           .attrs = attrs});
    }
  }
}

}  // namespace loom::optest
