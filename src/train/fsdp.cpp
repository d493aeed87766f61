// FsdpEngine (see fsdp.h): segments, their shards and the traced
// collectives of a sharded step. ZeRO: Rajbhandari et al., "ZeRO: Memory
// Optimizations Toward Training Trillion Parameter Models" (SC 2020), stages
// 2 and 3; the flat, padded per-unit parameter of torch FSDP's FlatParameter
// (torch/distributed/fsdp/_flat_param.py) is the segment here.
#include "train/fsdp.h"

#include <cctype>
#include <cmath>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include "lazy/dispatch.h"
#include "loom/collective.h"
#include "loom/error.h"
#include "loom/lazy.h"
#include "loom/ops.h"

namespace loom::train {
namespace {

// The segment's flat values [W * S]: the parameters (or their grads) in
// order, zero-padded.
Tensor fsdp_flat(const FsdpSegment& seg, const std::vector<Tensor>& parts, int64_t world) {
  std::vector<Tensor> flat;
  for (const Tensor& t : parts) flat.push_back(reshape(t, {t.numel()}));
  const int64_t pad = seg.shard_numel * world - seg.numel;
  if (pad > 0) flat.push_back(zeros({pad}, seg.dtype, seg.params.front().device()));
  return flat.size() == 1 ? flat[0] : concat(flat, 0);
}

}  // namespace

std::string fsdp_unit_of(const std::string& name) {
  size_t start = 0;
  while (start <= name.size()) {
    size_t dot = name.find('.', start);
    if (dot == std::string::npos) dot = name.size();
    bool digits = dot > start;
    for (size_t i = start; i < dot; ++i)
      digits = digits && std::isdigit(static_cast<unsigned char>(name[i]));
    if (digits) return name.substr(0, dot);
    start = dot + 1;
  }
  // Outside the layers: the parameter's module (its name without the last
  // component), so that the big root tensors (the embedding, an untied head)
  // are segments of their own: a segment of one parameter whose size W
  // divides is reduce-scattered from its gradient as it is, with no
  // concatenated copy (the tied embedding's 154 MB in GPT-2 124M).
  const size_t last = name.rfind('.');
  return last == std::string::npos ? name : name.substr(0, last);
}

FsdpEngine::FsdpEngine(FsdpMode mode, const std::vector<optim::ParamGroup>& groups, int64_t world,
                       int64_t rank)
    : mode_(mode), world_(world), rank_(rank) {
  LOOM_CHECK(world >= 1 && rank >= 0 && rank < world, "[fsdp] rank ", rank,
             " is not a rank of world size ", world);
  for (size_t g = 0; g < groups.size(); ++g) {
    std::map<std::string, size_t> of_unit;  // unit -> index in segments_
    for (size_t k = 0; k < groups[g].params.size(); ++k) {
      const Tensor& p = groups[g].params[k];
      const std::string name = k < groups[g].names.size() ? groups[g].names[k] : "";
      const std::string unit = fsdp_unit_of(name);
      auto [it, fresh] = of_unit.try_emplace(unit, segments_.size());
      if (fresh) {
        segments_.emplace_back();
        segments_.back().unit = unit;
        segments_.back().group = g;
        segments_.back().dtype = p.dtype();
      }
      FsdpSegment& seg = segments_[it->second];
      LOOM_CHECK(seg.dtype == p.dtype(), "[fsdp] unit '", unit, "' mixes ", dtype_name(seg.dtype),
                 " and ", dtype_name(p.dtype()), " parameters (", name, ")");
      seg.params.push_back(p);
      seg.names.push_back(name);
      seg.numel += p.numel();
    }
  }
  for (FsdpSegment& seg : segments_) seg.shard_numel = (seg.numel + world_ - 1) / world_;
  fill_shards();
}

void FsdpEngine::fill_shards() {
  NoGradGuard no_grad;
  std::vector<Tensor> fresh;
  for (FsdpSegment& seg : segments_) {
    const int64_t s = seg.shard_numel;
    Tensor mine = slice(fsdp_flat(seg, seg.params, world_), 0, rank_ * s, (rank_ + 1) * s);
    if (!seg.shard.defined()) {
      seg.shard = mine.detach();
      seg.shard.requires_grad_(true);
    } else {
      seg.shard.copy_(mine);
    }
    fresh.push_back(seg.shard);
  }
  if (!fresh.empty() && fresh.front().device().is_lazy()) lazy::sync(fresh);  // local slices
  if (mode_ == FsdpMode::full_shard) gather_params();
}

void FsdpEngine::load_shards_from_params() { fill_shards(); }

bool FsdpEngine::params_stay_pending() const {
  return mode_ == FsdpMode::full_shard && !segments_.empty() &&
         segments_.front().shard.device().is_lazy();
}

std::vector<optim::ParamGroup> FsdpEngine::shard_groups(
    const std::vector<optim::ParamGroup>& groups) const {
  std::vector<optim::ParamGroup> out;
  for (const optim::ParamGroup& g : groups) out.push_back({{}, g.options, {}});
  for (const FsdpSegment& seg : segments_) {
    out[seg.group].params.push_back(seg.shard);
    out[seg.group].names.push_back("fsdp:" + (seg.unit.empty() ? "<root>" : seg.unit));
  }
  return out;
}

void FsdpEngine::reduce_scatter_grads() {
  NoGradGuard no_grad;
  for (FsdpSegment& seg : segments_) {
    std::vector<Tensor> grads;
    for (const Tensor& p : seg.params) {
      Tensor g = p.grad();
      grads.push_back(g.defined() ? cast(g, seg.dtype) : zeros_like(p));
    }
    Tensor flat = fsdp_flat(seg, grads, world_);
    seg.shard.set_grad(world_ > 1 ? reduce_scatter(flat, dist::ReduceOp::mean) : flat);
    for (Tensor p : seg.params) p.zero_grad();
  }
}

Tensor FsdpEngine::clip_grad_norm(double max_norm) {
  LOOM_CHECK(max_norm >= 0, "[fsdp] max_grad_norm must be >= 0, got ", max_norm);
  NoGradGuard no_grad;
  if (segments_.empty()) return zeros({}, DType::f32);
  const Device dev = segments_.front().shard.device();
  std::vector<Tensor> squares;
  for (const FsdpSegment& seg : segments_) {
    Tensor g = cast(seg.shard.grad(), DType::f32);
    squares.push_back(reshape(sum(mul(g, g)), {1}));
  }
  Tensor sq = squares.size() == 1 ? reshape(squares[0], {}) : sum(concat(squares, 0));
  if (world_ > 1) sq = all_reduce(sq, dist::ReduceOp::sum);
  Tensor total = sqrt(sq);
  Tensor coef = minimum(div(scalar_tensor(max_norm, DType::f32, dev), add(total, 1e-6)), 1.0);
  for (FsdpSegment& seg : segments_) {
    Tensor g = seg.shard.grad();
    g.copy_(mul(g, g.dtype() == DType::f32 ? coef : cast(coef, g.dtype())));
  }
  return total;
}

void FsdpEngine::gather_params() {
  NoGradGuard no_grad;
  for (FsdpSegment& seg : segments_) {
    const bool unsynced = params_stay_pending();
    Tensor full = world_ > 1 ? all_gather(seg.shard) : seg.shard;
    int64_t offset = 0;
    for (Tensor p : seg.params) {
      const int64_t n = p.numel();
      Tensor v = reshape(slice(full, 0, offset, offset + n), p.shape());
      offset += n;
      if (unsynced)
        lazy::rebind_unsynced(p, v);
      else
        p.copy_(v);
    }
  }
}

void FsdpEngine::materialize_params() {
  if (mode_ != FsdpMode::full_shard) return;
  std::vector<Tensor> params;
  for (const FsdpSegment& seg : segments_)
    params.insert(params.end(), seg.params.begin(), seg.params.end());
  if (params.empty() || !params.front().device().is_lazy()) return;
  // The step's arena is not needed until the next step (which grows it
  // again); one segment at a time, so that only one gathered flat segment
  // is transient beside the whole parameters.
  lazy::empty_cache();
  for (const FsdpSegment& seg : segments_) lazy::sync(seg.params);
}

void FsdpEngine::zero_grad() {
  for (FsdpSegment& seg : segments_) seg.shard.zero_grad();
}

std::string FsdpEngine::index_json() const {
  nlohmann::json segs = nlohmann::json::array();
  for (const FsdpSegment& seg : segments_)
    segs.push_back({{"unit", seg.unit},
                    {"group", seg.group},
                    {"numel", seg.numel},
                    {"shard_numel", seg.shard_numel},
                    {"params", seg.names}});
  nlohmann::json j = {{"fsdp", fsdp_mode_name(mode_)}, {"world_size", world_}, {"segments", segs}};
  return j.dump(2) + "\n";
}

}  // namespace loom::train
