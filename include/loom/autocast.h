// Automatic mixed precision (the Hugging Face Trainer's `bf16` flag; PyTorch's
// torch.autocast("cpu", dtype=torch.bfloat16)). While an AutocastGuard is
// alive on a thread the ops follow torch.autocast's CPU op lists
// (aten/src/ATen/autocast_mode.cpp):
// - lower-precision list: loom::matmul and loom::scaled_dot_product_attention
//   cast f32 operands to the autocast dtype and return that dtype; nn::Linear
//   and nn::Conv1D (torch's linear / addmm) cast their f32 bias too, so a
//   linear layer's output with its bias is bf16;
// - fp32 list: cross_entropy casts low-precision logits to f32 (the loss is
//   f32); so do the BERT heads' MSE / BCE-with-logits losses;
// - layer_norm (in neither list on CPU) normalizes a bf16 input in f32 and
//   returns bf16, as torch's mixed-dtype CPU kernel;
// - every other op runs in the dtype of its inputs, with PyTorch's type
//   promotion: gelu / tanh / dropout of a bf16 value stay bf16, a bf16
//   branch added to the f32 residual stream gives f32.
// So activations between a linear layer and the next stay bf16 (no casts
// between them) while master weights, optimizer state, the residual stream,
// statistics and the loss stay f32 — what transformers' GPT-2 and BERT give
// under torch.autocast("cpu") (checked with forward hooks, torch 2.15).
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

/// True for the lower-precision float dtypes autocast runs in (bf16, f16).
inline bool is_low_precision_float(DType dtype) {
  return dtype == DType::bf16 || dtype == DType::f16;
}

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
