// Evaluation and prediction: transformers' Trainer.evaluate, predict,
// evaluation_loop and _determine_best_metric. Each batch's mean loss
// weighted by its batch size stays on the device until the end, then is
// summed on the host in f64; on the lazy device each batch is one mark_step, so every full
// batch runs the same cached graph. Predictions (logits) and labels are
// gathered only when compute_metrics needs them (or for predict()), copied to
// the host at the end and concatenated, padding dim 1 with -100 where batch
// lengths differ (transformers' nested_concat with padding_index -100).
// Data parallel: each rank evaluates a strided shard (train/eval_shard.h);
// sums and predictions are combined after the loop.
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

#include "loom/autocast.h"
#include "loom/device_loader.h"
#include "loom/lazy.h"
#include "train/ddp.h"
#include "train/eval_shard.h"
#include "train/trainer_impl.h"

namespace loom {
namespace {

// transformers' speed_metrics for evaluate/predict: num_steps =
// ceil(num_samples / eval batch size).
void add_speed_metrics(Logs& m, const std::string& prefix, double start, int64_t num_samples,
                       int64_t batch_size) {
  const double runtime = now_seconds() - start;
  m[prefix + "_runtime"] = round_to(runtime, 4);
  if (runtime <= 0) return;
  const double steps = std::ceil(static_cast<double>(num_samples) / batch_size);
  m[prefix + "_samples_per_second"] = round_to(num_samples / runtime, 3);
  m[prefix + "_steps_per_second"] = round_to(steps / runtime, 3);
}

template <typename T>
Tensor concat_host(const std::vector<Tensor>& parts, DType dtype) {
  const Shape& s0 = parts[0].shape();
  Shape out_shape = s0;
  out_shape[0] = 0;
  for (const Tensor& t : parts) {
    LOOM_CHECK(t.dim() == static_cast<int64_t>(s0.size()), "[Trainer] predictions of rank ",
               t.dim(), " and ", s0.size(), " cannot be concatenated");
    for (size_t d = 2; d < s0.size(); ++d)
      LOOM_CHECK(t.shape()[d] == s0[d], "[Trainer] predictions of shapes ", to_string(t.shape()),
                 " and ", to_string(s0), " differ beyond dim 1");
    out_shape[0] += t.shape()[0];
    if (s0.size() >= 2) out_shape[1] = std::max(out_shape[1], t.shape()[1]);
  }
  std::vector<T> out(static_cast<size_t>(numel(out_shape)), static_cast<T>(-100));
  const int64_t inner = s0.size() >= 3 ? numel(Shape(s0.begin() + 2, s0.end())) : 1;
  const int64_t row = s0.size() >= 2 ? out_shape[1] * inner : 1;
  int64_t r0 = 0;
  for (const Tensor& t : parts) {
    std::vector<T> v = t.to(Device("cpu")).to_vector<T>();
    const int64_t len = s0.size() >= 2 ? t.shape()[1] * inner : 1;
    for (int64_t r = 0; r < t.shape()[0]; ++r)
      std::memcpy(&out[(r0 + r) * row], &v[r * len], sizeof(T) * len);
    r0 += t.shape()[0];
  }
  return from_blob(out.data(), out_shape, dtype);
}

// Host concatenation along dim 0 (see the top of this file); undefined if none.
Tensor concat_padded(const std::vector<Tensor>& parts) {
  if (parts.empty()) return Tensor();
  const DType dt = parts[0].dtype();
  if (dt == DType::i64) return concat_host<int64_t>(parts, dt);
  if (dt == DType::i32) return concat_host<int32_t>(parts, dt);
  std::vector<Tensor> f32;
  for (const Tensor& t : parts) f32.push_back(t.dtype() == DType::f32 ? t : t.to(DType::f32));
  return concat_host<float>(f32, DType::f32);
}

// Data parallel: the ranks' rows (each an EvalShardSampler shard) gathered
// into dataset order on every rank; `local` itself at one rank. Every rank
// calls it (a collective), with or without rows of its own.
Tensor gather_rows(const Tensor& local) {
  if (train::ddp_world_size() == 1) return local;
  std::vector<Tensor> parts;
  for (const std::string& b : train::host_all_gather(train::host_tensor_bytes(local)))
    parts.push_back(train::host_tensor_from_bytes(b));
  return train::interleave_shards(parts);
}

// The batches' [] losses as f64 on the host; data parallel: every rank's,
// batch k of rank r at position k * W + r (see evaluation_loop).
std::vector<double> ordered_batch_losses(const std::vector<Tensor>& batch_losses) {
  std::vector<double> local;
  for (const Tensor& t : batch_losses) local.push_back(t.item());
  if (train::ddp_world_size() == 1) return local;
  std::string bytes(reinterpret_cast<const char*>(local.data()), local.size() * sizeof(double));
  const std::vector<std::string> all = train::host_all_gather(bytes);
  std::vector<std::vector<double>> per_rank;
  size_t longest = 0;
  for (const std::string& b : all) {
    per_rank.emplace_back(b.size() / sizeof(double));
    std::memcpy(per_rank.back().data(), b.data(), per_rank.back().size() * sizeof(double));
    longest = std::max(longest, per_rank.back().size());
  }
  std::vector<double> out;
  for (size_t k = 0; k < longest; ++k)
    for (const auto& r : per_rank)
      if (k < r.size()) out.push_back(r[k]);
  return out;
}

// The whole set's loss sum, sample count and whether any batch had a loss.
// The batches' losses are summed on the host in f64, in batch order; data
// parallel: in the order of the interleaved shards (rank 0's first batch,
// rank 1's first, ...), which with per_device_eval_batch_size 1 is dataset
// order, so the sum is bit for bit that of one process. Every rank calls
// the gather and the all-reduce, whatever its batch count.
struct EvalSums {
  double loss_sum = 0;
  int64_t observed = 0;
  bool has_loss = false;
};

EvalSums combine_eval_sums(const std::vector<Tensor>& batch_losses, int64_t observed,
                           bool has_loss) {
  EvalSums out;
  for (double v : ordered_batch_losses(batch_losses)) out.loss_sum += v;
  std::vector<double> counts = {static_cast<double>(observed), has_loss ? 1.0 : 0.0};
  if (train::ddp_world_size() > 1) counts = train::host_all_reduce_sum(std::move(counts));
  out.observed = static_cast<int64_t>(counts[0]);
  out.has_loss = counts[1] > 0;
  return out;
}

}  // namespace

Trainer::Impl::LoopOutput Trainer::Impl::evaluation_loop(
    std::shared_ptr<const data::Dataset> dataset, const std::string& prefix,
    bool prediction_loss_only) {
  data::DataLoader loader = make_loader(dataset, args.per_device_eval_batch_size, false);
  data::DeviceLoader dl(loader, device, {.prefetch = 2, .mark_step = false});
  if (device.is_lazy()) lazy::mark_step();  // keep earlier pending work out of the eval graph
  // --fsdp full_shard: whole weights first, on every rank — the shards hold
  // uneven batch counts, and a gather in one rank's extra batch would hang.
  if (fsdp) fsdp->materialize_params();
  model->eval();
  NoGradGuard no_grad;
  std::vector<Tensor> batch_losses;  // per batch: mean loss * batch size, [] f32
  bool has_loss = false;
  int64_t observed = 0, done = 0;
  const int64_t total = loader.size();
  std::vector<Tensor> preds, labels;
  auto stream = dl.stream(0);
  while (std::optional<data::Batch> batch = stream->next()) {
    ModelOutput out;
    {
      AutocastGuard amp(use_autocast());
      ModelInputs inputs = to_inputs(*batch);
      out = model->forward(inputs);
      // HF's prediction_step computes eval_loss through compute_loss, so the
      // label smoother applies to it too.
      if (args.label_smoothing_factor > 0 && out.loss.defined() && out.logits.defined())
        out.loss = trainer_label_smoothed_loss(out.logits, inputs.labels, shifts_labels,
                                               args.label_smoothing_factor);
    }
    const int64_t bs = batch->size();
    observed += bs;
    if (out.loss.defined()) {
      batch_losses.push_back(out.loss.detach() * static_cast<double>(bs));
      has_loss = true;
    }
    if (!prediction_loss_only) {
      // Under autocast the logits are bf16 (as torch's); predictions go to the
      // host as f32, as the HF Trainer's nested_numpify upcasts bf16.
      if (out.logits.defined())
        preds.push_back(is_low_precision_float(out.logits.dtype()) ? cast(out.logits, DType::f32)
                                                                   : out.logits);
      if (batch->contains("labels")) labels.push_back(batch->at("labels"));
    }
    out = ModelOutput();
    if (device.is_lazy()) lazy::mark_step();
    ++done;
    each([&](TrainerCallback& c) { c.on_prediction_step(args, state, control, done, total); });
  }
  stream.reset();
  LoopOutput o;
  const EvalSums sums = combine_eval_sums(batch_losses, observed, has_loss);
  o.num_samples = sums.observed;
  const double mean_loss = sums.has_loss && sums.observed > 0
                               ? sums.loss_sum / static_cast<double>(sums.observed)
                               : std::numeric_limits<double>::quiet_NaN();
  has_loss = sums.has_loss;
  o.predictions = gather_rows(concat_padded(preds));
  o.label_ids = gather_rows(concat_padded(labels));
  if (options.compute_metrics) {
    EvalPrediction p;
    p.predictions = o.predictions;
    p.label_ids = o.label_ids;
    p.loss = mean_loss;
    o.metrics = options.compute_metrics(p);
  }
  if (has_loss) o.metrics[prefix + "_loss"] = mean_loss;
  Logs prefixed;
  for (auto& [k, v] : o.metrics) prefixed[k.rfind(prefix + "_", 0) == 0 ? k : prefix + "_" + k] = v;
  o.metrics = std::move(prefixed);
  return o;
}

Logs Trainer::Impl::evaluate(std::shared_ptr<const data::Dataset> dataset,
                             const std::string& prefix) {
  if (!dataset) dataset = eval_dataset;
  LOOM_CHECK(dataset != nullptr, "[Trainer] evaluate() needs an eval_dataset");
  const double start = now_seconds();
  const bool loss_only = !options.compute_metrics || args.prediction_loss_only;
  LoopOutput o = evaluation_loop(dataset, prefix, loss_only);
  Logs metrics = std::move(o.metrics);
  add_speed_metrics(metrics, prefix, start, o.num_samples, args.per_device_eval_batch_size);
  metrics = log(std::move(metrics));
  control.should_evaluate = false;
  each([&](TrainerCallback& c) { c.on_evaluate(args, state, control, metrics); });
  return metrics;
}

bool Trainer::Impl::determine_best_metric(const Logs& metrics) {
  if (!args.metric_for_best_model) return false;
  const std::string key = args.best_metric_key();
  auto it = metrics.find(key);
  if (it == metrics.end()) {
    std::string have;
    for (const auto& [k, v] : metrics) have += (have.empty() ? "" : ", ") + k;
    fail("[Trainer] metric_for_best_model: '", key, "' is not among the evaluation metrics (", have,
         ")");
  }
  const bool greater = args.greater_is_better.value_or(false);
  if (!state.best_metric)
    state.best_metric = greater ? -std::numeric_limits<double>::infinity()
                                : std::numeric_limits<double>::infinity();
  const double v = it->second;
  if (!(greater ? v > *state.best_metric : v < *state.best_metric)) return false;
  state.best_metric = v;
  if (args.save_strategy != "no") state.best_global_step = state.global_step;
  return true;
}

PredictionOutput Trainer::predict(std::shared_ptr<const data::Dataset> test_dataset,
                                  const std::string& metric_key_prefix) {
  LOOM_CHECK(test_dataset != nullptr, "[Trainer] predict() needs a test_dataset");
  Impl& m = *impl_;
  const double start = now_seconds();
  Impl::LoopOutput o =
      m.evaluation_loop(test_dataset, metric_key_prefix, m.args.prediction_loss_only);
  add_speed_metrics(o.metrics, metric_key_prefix, start, o.num_samples,
                    m.args.per_device_eval_batch_size);
  m.each([&](TrainerCallback& c) { c.on_predict(m.args, m.state, m.control, o.metrics); });
  PredictionOutput out;
  out.predictions = o.predictions;
  out.label_ids = o.label_ids;
  out.metrics = std::move(o.metrics);
  return out;
}

}  // namespace loom
