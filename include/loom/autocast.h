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
// the guard around the op call, not around mark_step(). The state is an
// inline thread_local, readable from any layer; autocast_native() (which asks
// the device's backend) is defined in src/lazy/autocast_native.cpp.
//
// Whether a requested autocast pays: choose_autocast() (the Trainer's --bf16
// uses it) keeps f32 on a device whose matmuls have no native bf16 (e.g. a
// CPU without AVX512-BF16/AMX, where oneDNN emulates bf16 or goes through
// f32), since there autocast only adds casts and is slower than f32.
#pragma once

#include <string>

#include "loom/device.h"
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

/// The precision a run takes for a requested autocast: `enabled` says
/// whether to run under AutocastGuard(true, dtype); `message` is the one log
/// line that says which path runs and why.
struct AutocastChoice {
  bool enabled = false;
  std::string message;
};

/// Decides the path for a requested autocast to `dtype` (bf16 or f16) on a
/// device whose matmuls run `dtype` natively (`native`, see autocast_native)
/// or not. requested && native: autocast; requested && !native: f32 (the
/// low-precision path would be slower: emulated GEMMs plus casts);
/// !requested: f32. Pure; never throws.
inline AutocastChoice choose_autocast(bool requested, DType dtype, bool native) {
  std::string name = dtype_name(dtype);
  if (!requested) return {false, "precision: f32 (" + name + " autocast not requested)"};
  if (native) return {true, "precision: " + name + " autocast (native " + name + " matmuls)"};
  return {false, "precision: f32 (" + name + " requested, but this device has no native " + name +
                     " matmul; autocast would be slower than f32)"};
}

/// True when `device`'s backend runs `dtype` matmuls on native low-precision
/// hardware (cpu: oneDNN's ISA has AVX512-BF16 or AMX for bf16; f16 never);
/// true for f32. LOOM_AUTOCAST_NATIVE=0 or 1 overrides the answer (tests,
/// benches). Throws loom::Error "[backend] unknown backend 'x' ..." for a
/// device whose backend is not registered.
bool autocast_native(const Device& device, DType dtype);

}  // namespace loom
