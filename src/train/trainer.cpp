// Trainer: construction (argument checks, seeding, device placement, the
// default callbacks), accessors, log(), callback management, batches ->
// ModelInputs, the default compute_loss and save_model. The loop is in
// trainer_loop.cpp, evaluation in evaluation.cpp, checkpoints in
// checkpoint_*.cpp.
#include "loom/trainer.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <unordered_set>

#include "loom/autocast.h"
#include "loom/causal_lm.h"
#include "loom/lazy.h"
#include "loom/sequence_classifier.h"
#include "loom/tensorboard.h"
#include "train/checkpoint_files.h"
#include "train/ddp.h"
#include "train/eval_shard.h"
#include "train/trainer_impl.h"

namespace loom {
namespace fs = std::filesystem;

namespace {

// Parameters outside embedding modules (transformers' num_parameters with
// exclude_embeddings=True; a head tied to an embedding is excluded too).
int64_t non_embedding_parameters(PretrainedModel& model) {
  std::unordered_set<const TensorImpl*> embedding;
  for (auto& [name, m] : model.named_modules())
    if (auto* e = dynamic_cast<nn::Embedding*>(m)) embedding.insert(e->weight().impl());
  int64_t n = 0;
  for (const Tensor& p : model.parameters())
    if (!embedding.count(p.impl())) n += p.numel();
  return n;
}

}  // namespace

Tensor trainer_label_smoothed_loss(Tensor logits, Tensor labels, bool shift, double factor) {
  if (shift && logits.dim() == 3) {
    logits = slice(logits, 1, 0, logits.size(1) - 1);
    labels = slice(labels, 1, 1, labels.size(1));
  }
  return cross_entropy(logits, labels, -100, factor);  // logits [..., V], labels [...]
}

bool loss_ignores_padding_labels(const PretrainedModel& model) {
  const auto* cls = dynamic_cast<const SequenceClassifier*>(&model);
  if (cls == nullptr) return true;
  const std::string& type = cls->pretrained_config().problem_type;
  if (type.empty()) return cls->num_labels() > 1;  // transformers' inference from num_labels
  return type == "single_label_classification";
}

Trainer::Trainer(std::shared_ptr<PretrainedModel> model, TrainingArguments args,
                 std::shared_ptr<const data::Dataset> train_dataset,
                 std::shared_ptr<const data::Dataset> eval_dataset, TrainerOptions options)
    : impl_(std::make_unique<Impl>()) {
  LOOM_CHECK(model != nullptr, "[Trainer] model must not be null");
  args.validate();
  LOOM_CHECK(args.eval_strategy == "no" || eval_dataset != nullptr, "[Trainer] eval_strategy '",
             args.eval_strategy, "' needs an eval_dataset (or set eval_strategy to 'no')");
  LOOM_CHECK(options.tokenizer_dir.empty() || fs::is_directory(options.tokenizer_dir),
             "[Trainer] tokenizer_dir '", options.tokenizer_dir, "' is not a directory");
  Impl& m = *impl_;
  m.self = this;
  m.model = std::move(model);
  m.args = std::move(args);
  m.device = m.args.device;
  m.train_dataset = std::move(train_dataset);
  m.eval_dataset = std::move(eval_dataset);
  m.options = std::move(options);
  if (!m.options.data_collator) m.options.data_collator = std::make_shared<data::PaddingCollator>();
  // A causal LM's loss shifts its labels (loom/causal_lm.h); masked-LM and
  // classification losses do not.
  m.shifts_labels = m.options.loss_shifts_labels.value_or(
      dynamic_cast<const CausalLM*>(m.model.get()) != nullptr);
  manual_seed(static_cast<uint64_t>(m.args.seed));
  m.model->to(m.device);
  m.flos_params = non_embedding_parameters(*m.model);
  m.callbacks.push_back(std::make_shared<DefaultFlowCallback>());
  // transformers' reporting integrations come after the default callbacks.
  // Data parallel: only rank 0 reports, prints and draws the progress bar
  // (HF's callbacks check is_world_process_zero).
  const bool zero = train::is_world_process_zero();
  if (zero && m.args.reports_to("tensorboard"))
    m.callbacks.push_back(std::make_shared<TensorBoardCallback>());
  for (auto& cb : m.options.callbacks) add_callback(cb);
  const bool tty = ::isatty(::fileno(stderr)) != 0;
  if (!zero) {
    // no printer
  } else if (tty && !m.args.disable_tqdm.value_or(false)) {
    m.callbacks.push_back(std::make_shared<ProgressCallback>());
  } else {
    m.callbacks.push_back(std::make_shared<PrinterCallback>());
  }
  m.each([&](TrainerCallback& c) { c.on_init_end(m.args, m.state, m.control); });
}

Trainer::~Trainer() = default;

TrainOutput Trainer::train(std::optional<std::string> resume_from_checkpoint) {
  return impl_->train(std::move(resume_from_checkpoint));
}

Logs Trainer::evaluate(std::shared_ptr<const data::Dataset> eval_dataset,
                       const std::string& metric_key_prefix) {
  return impl_->evaluate(std::move(eval_dataset), metric_key_prefix);
}

void Trainer::save_model(const std::string& dir) {
  if (!train::is_world_process_zero()) return;  // data parallel: rank 0 saves (HF's should_save)
  const std::string out = dir.empty() ? impl_->args.output_dir : dir;
  impl_->write_model_files(out);
  train::write_text_file((fs::path(out) / "training_args.json").string(), impl_->args.to_json());
}

void Trainer::save_state() const {
  if (!train::is_world_process_zero()) return;
  train::create_dir(impl_->args.output_dir, "[save_state] output_dir");
  train::write_text_file((fs::path(impl_->args.output_dir) / "trainer_state.json").string(),
                         impl_->state.to_json());
}

Logs Trainer::log(Logs logs) { return impl_->log(std::move(logs)); }

void Trainer::add_callback(std::shared_ptr<TrainerCallback> callback) {
  LOOM_CHECK(callback != nullptr, "[Trainer] add_callback: null callback");
  auto& cbs = impl_->callbacks;
  // Keep the progress/printer callback last, as transformers adds it last.
  auto it = cbs.end();
  if (!cbs.empty() &&
      (cbs.back()->name() == "ProgressCallback" || cbs.back()->name() == "PrinterCallback"))
    it = cbs.end() - 1;
  cbs.insert(it, std::move(callback));
}

std::shared_ptr<TrainerCallback> Trainer::pop_callback(const std::string& name) {
  auto& cbs = impl_->callbacks;
  for (auto it = cbs.begin(); it != cbs.end(); ++it) {
    if ((*it)->name() != name) continue;
    auto cb = *it;
    cbs.erase(it);
    return cb;
  }
  return nullptr;
}

const std::vector<std::shared_ptr<TrainerCallback>>& Trainer::callbacks() const {
  return impl_->callbacks;
}
const TrainingArguments& Trainer::args() const { return impl_->args; }
const TrainerState& Trainer::state() const { return impl_->state; }
TrainerControl& Trainer::control() { return impl_->control; }
PretrainedModel& Trainer::model() const { return *impl_->model; }
const Device& Trainer::device() const { return impl_->device; }
optim::Optimizer* Trainer::optimizer() const { return impl_->optimizer.get(); }
optim::LRScheduler* Trainer::lr_scheduler() const { return impl_->scheduler.get(); }

Tensor Trainer::compute_loss(PretrainedModel& model, const ModelInputs& inputs,
                             const Tensor& num_items_in_batch) {
  ModelOutput out = model.forward(inputs);
  LOOM_CHECK(out.loss.defined(), "[Trainer] the model (", model.architecture(),
             ") returned no loss: the batches need \"labels\"");
  if (impl_->args.label_smoothing_factor > 0)
    out.loss = trainer_label_smoothed_loss(out.logits, inputs.labels, impl_->shifts_labels,
                                           impl_->args.label_smoothing_factor);
  if (!num_items_in_batch.defined()) return out.loss;
  // mean loss * (items in this batch / items in the window) = this batch's
  // summed loss / items in the window (transformers' num_items_in_batch).
  Tensor labels = inputs.labels;
  if (impl_->shifts_labels && labels.dim() >= 2) labels = slice(labels, 1, 1, labels.size(1));
  Tensor count = cast(sum(ne(labels, -100.0)), DType::f32);
  // A batch with no counted label (data parallel: a rank's batch made only of
  // DistributedSampler padding) has a NaN mean (0 / 0, as torch); it adds
  // exactly 0 to the loss, and `where` passes a zero gradient back.
  return where(gt(count, 0.0), out.loss, 0.0) * (count / num_items_in_batch);
}

// ---- Impl helpers. ----

data::DataLoader Trainer::Impl::make_loader(std::shared_ptr<const data::Dataset> dataset,
                                            int64_t batch_size, bool shuffle) const {
  data::DataLoaderOptions o;
  o.batch_size = batch_size;
  o.drop_last = args.dataloader_drop_last;
  o.shuffle = shuffle;
  o.seed = args.sampler_seed();
  o.num_workers = static_cast<int>(args.dataloader_num_workers);
  const int64_t world = train::ddp_world_size();
  if (world == 1) return data::DataLoader(std::move(dataset), options.data_collator, o);
  // Data parallel: training takes torch's DistributedSampler (every rank the
  // same number of batches, shuffled by seed + epoch); evaluation a strided
  // shard without padding (train/eval_shard.h).
  std::shared_ptr<const data::Sampler> sampler;
  const int64_t n = dataset->size();
  std::shared_ptr<const data::Collator> collator = options.data_collator;
  if (shuffle) {
    sampler = std::make_shared<data::DistributedSampler>(
        n, data::DistributedOptions{.num_replicas = world,
                                    .rank = train::ddp_rank(),
                                    .shuffle = true,
                                    .seed = o.seed,
                                    .drop_last = args.dataloader_drop_last});
    // The samples repeated to even out the shards get ignore_index labels
    // (data::PaddingMaskCollator: they count zero) where the loss skips those.
    if (loss_ignores_padding_labels(*model))
      collator = std::make_shared<data::PaddingMaskCollator>(std::move(collator));
  } else {
    // drop_last applies to the whole set, not to each rank's shard: shard
    // the floor(n / batch) * batch rows one process keeps and let every rank
    // keep its last partial batch, so the metrics are one process's (a rank
    // dropping its own remainder would lose rows, or hold none at all).
    const int64_t kept = args.dataloader_drop_last ? n / batch_size * batch_size : n;
    sampler = std::make_shared<train::EvalShardSampler>(kept, train::ddp_rank(), world);
    o.drop_last = false;
  }
  o.shuffle = false;
  return data::DataLoader(std::move(dataset), std::move(collator), o, std::move(sampler));
}

ModelInputs Trainer::Impl::to_inputs(const data::Batch& batch) const {
  ModelInputs in;
  for (const auto& [name, t] : batch.tensors()) {
    if (name == "input_ids") {
      in.input_ids = t;
    } else if (name == "attention_mask") {
      in.attention_mask = t;
    } else if (name == "token_type_ids") {
      in.token_type_ids = t;
    } else if (name == "position_ids") {
      in.position_ids = t;
    } else if (name == "labels") {
      in.labels = t;
    }  // other columns are dropped, as the Trainer removes unused columns
  }
  return in;
}

Logs Trainer::Impl::log(Logs logs) {
  logs["epoch"] = state.epoch;
  if (args.include_num_input_tokens_seen)  // as transformers' Trainer.log
    logs["num_input_tokens_seen"] = static_cast<double>(state.num_input_tokens_seen);
  Logs entry = logs;
  entry["step"] = static_cast<double>(state.global_step);
  state.log_history.push_back(std::move(entry));
  control.should_log = false;
  each([&](TrainerCallback& c) { c.on_log(args, state, control, logs); });
  return logs;
}

void Trainer::Impl::store_flos() {
  // Data parallel: every rank's floating point operations (HF gathers and sums them).
  if (train::ddp_world_size() > 1) current_flos = train::host_all_reduce_sum({current_flos})[0];
  state.total_flos += current_flos;
  current_flos = 0;
}

// Data parallel: a launcher mistake (other flags, another model on one rank)
// would otherwise hang or train garbage. Compared: the arguments (without
// logging_dir, which names the host and time), the parameters' names,
// shapes and dtypes, the datasets' sizes (other data on one rank would make
// the shards uneven: a hang at the epoch's end or a silent mix), and whether
// --bf16 autocasts. Every rank calls it at the start of train().
void Trainer::Impl::check_same_setup_on_all_ranks() {
  if (train::ddp_world_size() == 1) return;
  TrainingArguments a = args;
  a.logging_dir.reset();
  // One item per line of the JSON, so a mismatch names the field.
  std::vector<std::string> lines;
  std::istringstream json(a.to_json());
  for (std::string line; std::getline(json, line);) lines.push_back(line);
  train::check_same_items_on_all_ranks("training arguments", lines);
  std::vector<std::string> params;
  for (const auto& [name, p] : model->named_parameters())
    params.push_back(name + " " + dtype_name(p.dtype()) + to_string(p.shape()));
  train::check_same_items_on_all_ranks("parameters", params);
  auto size_of = [](const std::shared_ptr<const data::Dataset>& d) {
    return d ? std::to_string(d->size()) : std::string("none");
  };
  train::check_same_items_on_all_ranks(
      "dataset sizes (every rank must read the same data)",
      {"train_dataset " + size_of(train_dataset), "eval_dataset " + size_of(eval_dataset)});
  // --bf16 runs under autocast only where this host's CPU has native bf16
  // matmuls: on mixed hosts the ranks would train in different precisions
  // (and all-reduce gradients of different models) under the same flags.
  train::check_same_items_on_all_ranks(
      "autocast decisions (--bf16, made from each host's CPU)",
      {std::string("autocast bf16 ") + (use_autocast() ? "on" : "off")});
}

Tensor Trainer::Impl::zero_scalar() const { return scalar_tensor(0.0, DType::f32, device); }

bool Trainer::Impl::use_autocast() {
  if (!autocast_on) {
    bool native = args.bf16 && autocast_native(device, DType::bf16);
    AutocastChoice c = choose_autocast(args.bf16, DType::bf16, native);
    // The same decision on every rank (check_same_setup_on_all_ranks): said once.
    if (args.bf16 && train::is_world_process_zero())
      std::fprintf(stderr, "[Trainer] %s\n", c.message.c_str());
    autocast_on = c.enabled;
  }
  return *autocast_on;
}

std::optional<std::string> get_last_checkpoint(const std::string& output_dir) {
  auto sorted = train::sorted_checkpoints(output_dir);
  if (sorted.empty()) return std::nullopt;
  return sorted.back();
}

}  // namespace loom
