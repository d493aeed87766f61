// The direct AdamW group kernel (adamw.h). Matching walks the group's body
// from its three outputs as the expression trees AdamW::step traces
// (torch/optim/adamw.py single-tensor order; lerp with weight < 0.5 as
// aten's Lerp.h), then checks that nothing else is in the body. The kernel
// runs blocks of kAdamWBlock elements: one pass computing exp_avg and
// exp_avg_sq, the interpreter's sqrt (vm::sqrt), one pass for the param,
// then the three stores; no FMA contraction (the file's functions are
// compiled with fp-contract off, pushed and popped so a unity batch's other
// files keep their options), so every operation rounds as the
// interpreter's.
#include "backends/cpu/adamw.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/vec_math.h"

#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")

namespace loom::backends::cpu {
namespace {

using ops::OpKind;

constexpr int64_t kAdamWBlock = 512;

class AdamWMatcher {
 public:
  explicit AdamWMatcher(const compiler::FusedGroup& g)
      : g_(g), ni_(g.num_inputs()), used_(g.body.size(), 0) {}

  bool match(AdamWGroup* a) {
    if (g_.has_reduce || g_.outputs.size() != 3) return false;
    for (const compiler::FusedOp& op : g_.body)
      if (op.type.dtype != DType::f32 || op.type.shape != g_.shape) return false;
    for (int o = 0; o < 3; ++o) {
      AdamWGroup t;
      used_.assign(g_.body.size(), 0);
      grad_value_ = m_value_ = v_value_ = -1;
      if (!param(ni_ + g_.outputs[o], &t)) continue;
      int p = ni_ + g_.outputs[o];
      int outs[3] = {-1, -1, -1};
      for (int k = 0; k < 3; ++k) {
        int v = ni_ + g_.outputs[k];
        if (v == p) outs[0] = k;
        if (v == m_value_) outs[1] = k;
        if (v == v_value_) outs[2] = k;
      }
      if (outs[0] < 0 || outs[1] < 0 || outs[2] < 0) return false;
      for (int u : used_)
        if (u == 0) return false;  // something else is computed too
      t.out_p = outs[0], t.out_m = outs[1], t.out_v = outs[2];
      *a = t;
      return true;
    }
    return false;
  }

 private:
  // The body op defining value `v` when it is `kind` (marked used), else null.
  const compiler::FusedOp* op(int v, OpKind kind) {
    if (v < ni_) return nullptr;
    const compiler::FusedOp& o = g_.body[v - ni_];
    if (o.op != kind) return nullptr;
    ++used_[v - ni_];
    return &o;
  }
  bool full_input(int v) const {
    return v < ni_ && g_.input_types[v].dtype == DType::f32 && g_.input_types[v].shape == g_.shape;
  }
  bool scalar_input(int v) const {
    return v < ni_ && g_.input_types[v].dtype == DType::f32 && g_.input_types[v].numel() == 1;
  }
  bool grad(int v, AdamWGroup* a) {  // grad or grad * coef
    if (full_input(v)) return a->grad < 0 ? (a->grad = v, true) : a->grad == v;
    if (a->grad >= 0) return v == grad_value_;
    const compiler::FusedOp* mul = op(v, OpKind::k_mul);
    if (!mul || !full_input(mul->args[0]) || !scalar_input(mul->args[1])) return false;
    a->grad = mul->args[0], a->coef = mul->args[1], grad_value_ = v;
    return true;
  }
  // m + (g - m) * w1
  bool exp_avg(int v, AdamWGroup* a) {
    const compiler::FusedOp* add = op(v, OpKind::k_add);
    if (!add || !full_input(add->args[0])) return false;
    const compiler::FusedOp* mul = op(add->args[1], OpKind::k_mul);
    if (!mul || !scalar_input(mul->args[1])) return false;
    const compiler::FusedOp* sub = op(mul->args[0], OpKind::k_sub);
    if (!sub || sub->args[1] != add->args[0] || !grad(sub->args[0], a)) return false;
    a->m = add->args[0], a->w1 = mul->args[1], m_value_ = v;
    return true;
  }
  // v * b2 + (g * c2) * g
  bool exp_avg_sq(int v, AdamWGroup* a) {
    const compiler::FusedOp* add = op(v, OpKind::k_add);
    if (!add) return false;
    const compiler::FusedOp* decayed = op(add->args[0], OpKind::k_mul);
    const compiler::FusedOp* sq = op(add->args[1], OpKind::k_mul);
    if (!decayed || !sq || !full_input(decayed->args[0]) || !scalar_input(decayed->args[1]))
      return false;
    const compiler::FusedOp* scaled = op(sq->args[0], OpKind::k_mul);
    if (!scaled || !scalar_input(scaled->args[1]) || !grad(scaled->args[0], a) ||
        sq->args[1] != scaled->args[0])
      return false;
    a->v = decayed->args[0], a->b2 = decayed->args[1], a->c2 = scaled->args[1], v_value_ = v;
    return true;
  }
  // (p | p * decay) + (m' * neg_step) / (sqrt(v') / bc2_sqrt + eps)
  bool param(int v, AdamWGroup* a) {
    const compiler::FusedOp* add = op(v, OpKind::k_add);
    if (!add) return false;
    const compiler::FusedOp* quot = op(add->args[1], OpKind::k_div);
    if (!quot) return false;
    const compiler::FusedOp* num = op(quot->args[0], OpKind::k_mul);
    const compiler::FusedOp* den = op(quot->args[1], OpKind::k_add);
    if (!num || !den || !scalar_input(num->args[1]) || !scalar_input(den->args[1])) return false;
    const compiler::FusedOp* scaled = op(den->args[0], OpKind::k_div);
    if (!scaled || !scalar_input(scaled->args[1])) return false;
    const compiler::FusedOp* root = op(scaled->args[0], OpKind::k_sqrt);
    if (!root || !exp_avg(num->args[0], a) || !exp_avg_sq(root->args[0], a)) return false;
    a->neg_step = num->args[1], a->eps = den->args[1], a->bc2_sqrt = scaled->args[1];
    if (full_input(add->args[0])) {
      a->p = add->args[0];
      return true;
    }
    const compiler::FusedOp* decay = op(add->args[0], OpKind::k_mul);
    if (!decay || !full_input(decay->args[0]) || !scalar_input(decay->args[1])) return false;
    a->p = decay->args[0], a->decay = decay->args[1];
    return true;
  }

  const compiler::FusedGroup& g_;
  int ni_;
  std::vector<int> used_;
  int grad_value_ = -1, m_value_ = -1, v_value_ = -1;
};

struct AdamWPointers {
  const float *g, *m, *v, *p;
  float coef = 1, w1, b2, c2, neg_step, bc2_sqrt, eps, decay = 1;
  float *out_p, *out_m, *out_v;
};

template <bool kClip, bool kDecay>
void adamw_blocks(const AdamWPointers& a, int64_t begin, int64_t n) {
  alignas(64) float mn[kAdamWBlock], vn[kAdamWBlock], root[kAdamWBlock], pn[kAdamWBlock];
  for (int64_t b0 = begin; b0 < begin + n; b0 += kAdamWBlock) {
    const int64_t nb = std::min(kAdamWBlock, begin + n - b0);
    const float *g = a.g + b0, *m = a.m + b0, *v = a.v + b0, *p = a.p + b0;
    for (int64_t j = 0; j < nb; ++j) {
      float gj = g[j];
      if constexpr (kClip) gj = gj * a.coef;
      mn[j] = m[j] + (gj - m[j]) * a.w1;
      vn[j] = v[j] * a.b2 + (gj * a.c2) * gj;
    }
    vm::sqrt(vn, root, nb);
    for (int64_t j = 0; j < nb; ++j) {
      float pj = p[j];
      if constexpr (kDecay) pj = pj * a.decay;
      pn[j] = pj + (mn[j] * a.neg_step) / (root[j] / a.bc2_sqrt + a.eps);
    }
    // Stored after every read of the block: outputs may be donated inputs.
    std::memcpy(a.out_m + b0, mn, sizeof(float) * nb);
    std::memcpy(a.out_v + b0, vn, sizeof(float) * nb);
    std::memcpy(a.out_p + b0, pn, sizeof(float) * nb);
  }
}

}  // namespace

bool match_adamw_group(const FusedCall& call, AdamWGroup* out) {
  return AdamWMatcher(*call.group).match(out);
}

void run_adamw_group(const FusedCall& call, const AdamWGroup& a, int64_t begin, int64_t n) {
  auto in = [&](int k) { return call.inputs[k].as<float>(); };
  AdamWPointers ptr;
  ptr.g = in(a.grad), ptr.m = in(a.m), ptr.v = in(a.v), ptr.p = in(a.p);
  if (a.coef >= 0) ptr.coef = in(a.coef)[0];
  if (a.decay >= 0) ptr.decay = in(a.decay)[0];
  ptr.w1 = in(a.w1)[0], ptr.b2 = in(a.b2)[0], ptr.c2 = in(a.c2)[0];
  ptr.neg_step = in(a.neg_step)[0], ptr.bc2_sqrt = in(a.bc2_sqrt)[0], ptr.eps = in(a.eps)[0];
  ptr.out_p = call.outputs[a.out_p].as<float>();
  ptr.out_m = call.outputs[a.out_m].as<float>();
  ptr.out_v = call.outputs[a.out_v].as<float>();
  const bool clip = a.coef >= 0, decay = a.decay >= 0;
  if (clip && decay)
    adamw_blocks<true, true>(ptr, begin, n);
  else if (clip)
    adamw_blocks<true, false>(ptr, begin, n);
  else if (decay)
    adamw_blocks<false, true>(ptr, begin, n);
  else
    adamw_blocks<false, false>(ptr, begin, n);
}

}  // namespace loom::backends::cpu

#pragma GCC pop_options
