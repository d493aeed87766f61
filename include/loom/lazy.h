// The lazy device's controls (PyTorch/XLA's xm.mark_step and friends).
//
//   loom::Device dev("lazy");
//   for (...) {
//     loss = model.forward(batch.to(dev)); loss.backward(); opt.step();
//     loom::lazy::mark_step();   // compile once, then re-run the executable
//   }
#pragma once

#include <vector>

#include "loom/tensor.h"

namespace loom::lazy {

/// Cuts the pending graph of every live lazy tensor, compiles it (or takes
/// it from the compile cache), executes it and rebinds each tensor to its
/// result. Counts MarkStep.
void mark_step();

/// Blocks until every launched executable has finished (mark_step returns
/// as soon as its executable is launched; reading a value waits for it).
void wait();

/// Syncs just `tensors` (and what they depend on). Reading a value (item(),
/// to(cpu), data()) does this and counts an EarlySync.
void sync(const std::vector<Tensor>& tensors);

/// Number of IR nodes traced since the last sync (for the graph-size guard,
/// which syncs with a warning past LOOM_MAX_GRAPH_NODES, default 200000).
int64_t pending_nodes();

/// Checks that `device` can be used: for a lazy device, that its backend is
/// registered and has the device's index. Throws loom::Error "[device]
/// lazy:sim:3: backend sim has 1 device(s)" or "[backend] unknown backend
/// 'x' (expected cpu, reference, sim)".
void check_device(const Device& device);

/// Gradient checkpointing (docs/remat.md; HF's gradient_checkpointing_enable()).
/// While a RematScope made with `enabled` lives, every op traced on a lazy
/// device by this thread is marked as the forward of one checkpointed layer
/// call (ir::Instr::remat); the compiler's remat pass then keeps only what
/// that call reads from outside and the values later layers read, and
/// recomputes the rest of the call's activations just before backward needs
/// them. Models open one per decoder layer. A scope opened inside another
/// keeps the outer mark; `enabled` false does nothing. Ops on the eager cpu
/// device are not marked (nothing is kept past an eager op anyway).
class RematScope {
 public:
  explicit RematScope(bool enabled = true);
  ~RematScope();
  RematScope(const RematScope&) = delete;
  RematScope& operator=(const RematScope&) = delete;

 private:
  bool active_ = false;
};

/// Held by autograd's backward(): while alive, ops traced by this thread are
/// marked as backward ops (ir::Instr::remat = -1) when a RematScope was
/// opened on it since the last RematBackwardScope ended; otherwise nothing
/// is marked, so a step without checkpointing traces the same graph as before.
class RematBackwardScope {
 public:
  RematBackwardScope();
  ~RematBackwardScope();
  RematBackwardScope(const RematBackwardScope&) = delete;
  RematBackwardScope& operator=(const RematBackwardScope&) = delete;

 private:
  bool active_ = false;
};

/// Gives back memory the lazy device keeps for reuse, as PyTorch's
/// torch.cuda.empty_cache(): the executables' shared arena (the next run
/// allocates it again, fresh pages) and the host's cache of freed large
/// blocks. Waits for launched work first. Values are not touched.
void empty_cache();

/// Empties the in-memory compile cache and the recompile-cause history (tests).
void clear_compile_cache();

}  // namespace loom::lazy
