// RematScope / RematBackwardScope (loom/lazy.h): the thread-local marks that
// trace_op copies into each TraceNode, so the compiler's remat pass knows
// which ops are one checkpointed layer call's forward and which are
// backward. Call numbers only grow on a thread; collect() renumbers them
// 1, 2, ... per graph, so the graph hash does not depend on the counter.
#include "lazy/trace.h"
#include "loom/lazy.h"

namespace loom::lazy {
namespace {
thread_local int tl_remat_mark = 0;         // what trace_op records now
thread_local int tl_remat_next_call = 0;    // last call number handed out
thread_local bool tl_remat_opened = false;  // a RematScope opened since the last backward
}  // namespace

int current_remat_mark() { return tl_remat_mark; }

RematScope::RematScope(bool enabled) {
  if (!enabled || tl_remat_mark != 0) return;  // nested: the outer call keeps its mark
  active_ = true;
  tl_remat_opened = true;
  tl_remat_mark = ++tl_remat_next_call;
  if (tl_remat_next_call == (1 << 30)) tl_remat_next_call = 0;  // stays positive
}

RematScope::~RematScope() {
  if (active_) tl_remat_mark = 0;
}

RematBackwardScope::RematBackwardScope() {
  if (!tl_remat_opened || tl_remat_mark != 0) return;
  active_ = true;
  tl_remat_mark = -1;
}

RematBackwardScope::~RematBackwardScope() {
  if (!active_) return;
  tl_remat_mark = 0;
  tl_remat_opened = false;
}

}  // namespace loom::lazy
