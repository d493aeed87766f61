// Automatic mixed precision (the Hugging Face Trainer's `bf16` flag; PyTorch's
// torch.autocast("cpu", dtype=torch.bfloat16)). While an AutocastGuard is
// alive on a thread, loom::matmul and loom::scaled_dot_product_attention cast
// their f32 operands to the autocast dtype, run in that dtype and cast the
// result back to f32, so everything around them — master weights, optimizer
// state, softmax / layer-norm statistics, reductions, the loss — stays f32.
// Every other op is unaffected. Unlike torch.autocast the result of a matmul is
// returned as f32 (already rounded to bf16), which keeps the surrounding
// graph in one dtype.
//
//   loom::Tensor loss;
//   {
//     loom::AutocastGuard amp;              // bf16
//     loss = model.forward(batch);          // matmuls/attention in bf16
//   }
//   loss.backward();                        // gradients of f32 weights are f32
//
// Assumes: the state is thread-local (each thread starts with autocast off) and
// is read when an op is called (traced), so on the lazy device what counts is
// the guard around the op call, not around mark_step(). Header-only: the state
// is an inline thread_local, readable from any layer.
#pragma once

#include "loom/dtype.h"
#include "loom/error.h"

namespace loom {

/// The calling thread's autocast setting.
struct AutocastState {
  bool enabled = false;
  DType dtype = DType::bf16;  // bf16 or f16
};

/// The calling thread's autocast state (read by matmul and attention).
inline AutocastState& autocast_state() {
  thread_local AutocastState state;
  return state;
}

/// True when an AutocastGuard with enabled == true is alive on this thread.
inline bool is_autocast_enabled() { return autocast_state().enabled; }

/// The dtype autocast casts f32 matmul / attention operands to.
inline DType autocast_dtype() { return autocast_state().dtype; }

/// RAII: enables (or, with enabled == false, disables) autocast to `dtype` on
/// this thread for the guard's scope; the previous state comes back on
/// destruction, so guards nest. Throws loom::Error "[autocast] ..." when
/// `dtype` is not bf16 or f16 (the lower-precision float types autocast
/// supports, as torch.autocast on CPU).
class AutocastGuard {
 public:
  explicit AutocastGuard(bool enabled = true, DType dtype = DType::bf16)
      : previous_(autocast_state()) {
    LOOM_CHECK(dtype == DType::bf16 || dtype == DType::f16,
               "[autocast] dtype must be bf16 or f16, got ", dtype_name(dtype));
    autocast_state() = AutocastState{enabled, dtype};
  }
  ~AutocastGuard() { autocast_state() = previous_; }
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  AutocastState previous_;
};

}  // namespace loom
