// Optimizers (AdamW, SGD), gradient clipping, weight-decay parameter groups
// and learning-rate schedules, as torch.optim and transformers.optimization
// define them. Updates are in-place ops on parameters and state (they rebind
// the tensors' values, so parameters keep their identity), and every number
// that changes between steps — learning rate, bias corrections, clip
// coefficient — enters the graph as device data, never as a constant, so on
// the lazy device a training loop compiles once.
//
//   auto groups = loom::optim::weight_decay_groups(model.named_parameters(), 0.01);
//   loom::optim::AdamW opt(groups, {.lr = 5e-5});
//   loom::optim::LRScheduler sched("linear", opt, {.num_warmup_steps = 100,
//                                                  .num_training_steps = 1000});
//   for (...) {
//     loom::Tensor loss = model.forward(batch);
//     loss.backward();
//     loom::Tensor norm = loom::optim::clip_grad_norm_(model.parameters(), 1.0);
//     opt.step();
//     sched.step();
//     opt.zero_grad();
//     loom::lazy::mark_step();
//   }
//   opt.save("optimizer.safetensors");   // layout: docs/optim.md
//
// Assumes the parameters are leaf tensors of a floating dtype, all of a group
// on one device; updates run under NoGradGuard. Sources: torch.optim.AdamW /
// torch.optim.SGD (PyTorch 2.x, single-tensor path),
// torch.nn.utils.clip_grad_norm_, transformers.optimization.get_scheduler and
// transformers.Trainer.get_decay_parameter_names.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loom/tensor.h"

namespace loom::optim {

/// A group's hyperparameters by name, as the entries of a torch param-group
/// dict: "lr", "weight_decay", and per optimizer "beta1", "beta2", "eps"
/// (AdamW) or "momentum", "dampening", "nesterov" (SGD; nesterov is 0 or 1).
using Options = std::map<std::string, double>;

/// Parameters sharing hyperparameters. Keys missing from `options` take the
/// optimizer's defaults when the group is added; keys the optimizer does not
/// know are an error. `names` is empty or holds one name per parameter (used
/// in error messages).
struct ParamGroup {
  std::vector<Tensor> params;
  Options options;
  std::vector<std::string> names;

  /// options.at(key); throws loom::Error "[optim] ..." when absent.
  double option(const std::string& key) const;
  double lr() const { return option("lr"); }
  void set_lr(double lr) { options["lr"] = lr; }
};

/// One parameter's optimizer state: its step count (host integer, number of
/// updates applied) and named tensors of the parameter's shape ("exp_avg",
/// "exp_avg_sq" for AdamW; "momentum_buffer" for SGD with momentum).
struct ParamState {
  int64_t step = 0;
  std::map<std::string, Tensor> buffers;
};

/// An optimizer's state_dict, as torch's: hyperparameters of each group, the
/// parameters of each group as indices (numbered across groups in order) and
/// the state of each parameter that has one.
struct StateDict {
  std::string optimizer;  // "AdamW", "SGD"
  std::vector<Options> group_options;
  std::vector<std::vector<int64_t>> group_params;
  std::map<int64_t, ParamState> state;
};

/// The base class: parameter groups, zero_grad, state_dict and its
/// safetensors file. Not copyable; parameters are shared handles.
class Optimizer {
 public:
  virtual ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// Applies one update to every parameter that has a gradient (parameters
  /// whose grad is undefined are skipped and keep their step count, as
  /// torch). Throws loom::Error "[<optimizer>] ..." when a gradient's shape
  /// differs from its parameter's.
  virtual void step() = 0;

  /// Sets every parameter's grad to undefined (set_to_none, torch's default)
  /// or, with set_to_none == false, to zeros of the same value.
  void zero_grad(bool set_to_none = true);

  /// Adds a group: fills missing options from defaults(), then validates.
  /// Throws loom::Error for an unknown option key, an invalid value (see the
  /// optimizer's constructor), a parameter that is undefined, not floating,
  /// or already in a group, or `names` of the wrong length.
  void add_param_group(ParamGroup group);

  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  /// The constructor's hyperparameters (transformers' polynomial schedule
  /// reads defaults().at("lr")).
  const Options& defaults() const { return defaults_; }
  /// "AdamW" or "SGD".
  const std::string& name() const { return name_; }

  /// The current state. Tensors are handles to the live state (not copies).
  StateDict state_dict() const;
  /// Restores hyperparameters and state from `state` (as torch, the saved
  /// hyperparameters replace the current ones; parameters stay). State
  /// tensors are copied onto each parameter's device in its dtype. Throws
  /// loom::Error "[optim] ..." when the optimizer name, number of groups,
  /// parameters per group, an option key, or a state tensor's shape or name
  /// does not match.
  void load_state_dict(const StateDict& state);

  /// Writes state_dict() as safetensors (atomic; layout in docs/optim.md):
  /// tensors "state.<param index>.<buffer>" in f32 (or the state's dtype),
  /// __metadata__ {"optimizer": name, "param_groups": JSON array of the
  /// groups' options with "params": [indices], "step": JSON object
  /// {"<param index>": step count}}. Syncs the lazy state tensors in one
  /// graph, then writes each tensor from its own buffer, one after another:
  /// no host copy of the state is made (the extra host memory of a save is
  /// the file header). `extra_metadata` adds entries to __metadata__ (e.g.
  /// an FSDP shard's identity: train/fsdp_checkpoint.h); a key the layout
  /// uses ("optimizer", "param_groups", "step") throws loom::Error. Throws
  /// loom::Error on I/O failure.
  void save(const std::string& path,
            const std::map<std::string, std::string>& extra_metadata = {}) const;
  /// Reads a file written by save() and loads it with load_state_dict().
  /// Throws loom::Error "[optim] <path>: ..." for a malformed or mismatched
  /// file (plus the safetensors reader's errors).
  void load(const std::string& path);
  /// The StateDict of a file written by save() (tensors on the cpu), not
  /// loaded into any optimizer (FSDP re-shards it first). Throws as load().
  static StateDict read_state_dict(const std::string& path);

 protected:
  Optimizer(std::string name, Options defaults, std::vector<std::string> buffer_names);
  /// Checks a filled-in group's option values; throws loom::Error.
  virtual void validate(const Options& options) const = 0;
  /// The state of `param` (created empty, step 0, when absent).
  ParamState& state_for(const Tensor& param);
  /// The buffer `name` of `state`, created as zeros of `param`'s shape and
  /// dtype when absent (device data on the parameter's device, uploaded from
  /// the host, so the first step traces the same graph as the later ones).
  /// `*created` (if given) tells whether it was just created.
  static Tensor& buffer(ParamState& state, const std::string& name, const Tensor& param,
                        bool* created = nullptr);
  /// p.grad() checked against p's shape, cast to p's dtype; undefined if none.
  Tensor grad_of(const Tensor& param) const;

 private:
  std::string name_;
  Options defaults_;
  std::vector<std::string> buffer_names_;
  std::vector<ParamGroup> groups_;
  std::map<const TensorImpl*, ParamState> state_;
};

/// AdamW's defaults, those of torch.optim.AdamW.
struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
};

/// AdamW with decoupled weight decay (Loshchilov & Hutter 2019), exactly as
/// torch.optim.AdamW (amsgrad=False, maximize=False), per parameter at step t:
///   p <- p * (1 - lr * wd)
///   m <- lerp(m, g, 1 - beta1)          (= beta1 m + (1 - beta1) g)
///   v <- beta2 v + (1 - beta2) g^2
///   p <- p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
/// State buffers "exp_avg" (m) and "exp_avg_sq" (v), in the parameter's dtype.
class AdamW : public Optimizer {
 public:
  /// One group holding `params` with `options`.
  AdamW(std::vector<Tensor> params, AdamWOptions options = {});
  /// Several groups; each group's missing options come from `defaults`.
  /// Throws loom::Error "[AdamW] ..." when lr < 0, eps < 0, a beta is not in
  /// [0, 1) or weight_decay < 0 (torch's checks), and as add_param_group.
  AdamW(std::vector<ParamGroup> groups, AdamWOptions defaults = {});
  void step() override;

 protected:
  void validate(const Options& options) const override;
};

/// SGD's defaults, those of torch.optim.SGD.
struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

/// Stochastic gradient descent with momentum, as torch.optim.SGD
/// (maximize=False):
///   g <- g + wd * p
///   buf <- g at a parameter's first step, else momentum * buf + (1 - dampening) * g
///   g <- g + momentum * buf (nesterov) or buf
///   p <- p - lr * g
/// State buffer "momentum_buffer" when momentum != 0. The first step is
/// traced as buf = 0 * buf + 1 * g with both factors as graph inputs, so it
/// compiles to the same graph as the later steps.
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options = {});
  /// Throws loom::Error "[SGD] ..." when lr < 0, momentum < 0,
  /// weight_decay < 0, or nesterov with momentum <= 0 or dampening != 0
  /// (torch's checks), and as add_param_group.
  SGD(std::vector<ParamGroup> groups, SGDOptions defaults = {});
  void step() override;

 protected:
  void validate(const Options& options) const override;
};

/// Clips the gradients of `params` in place, as torch.nn.utils.clip_grad_norm_:
/// total = norm over all gradients of the per-gradient norms (norm_type 2 =
/// L2, std::numeric_limits<double>::infinity() = max-abs, any p > 0), then
/// every gradient is multiplied by min(1, max_norm / (total + 1e-6)).
/// Returns `total` as a rank-0 f32 tensor on the gradients' device, without
/// a host sync (on the lazy device it is a pending value of the step's
/// graph). Parameters without a gradient are skipped; with none, returns a
/// rank-0 zero. Throws loom::Error "[clip_grad_norm_] ..." when max_norm is
/// negative or NaN, or norm_type is not positive.
Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0);

/// True when the Hugging Face Trainer applies no weight decay to the
/// parameter called `name` (Trainer.get_decay_parameter_names): its
/// lowercased name contains "bias", "layernorm" or "rmsnorm", has a
/// component "norm" or one ending in "_norm", or — standing in for
/// transformers' isinstance(module, nn.LayerNorm) test, which needs the
/// module — a module component (not the last) named "ln", "ln_<x>",
/// "ln<digits>", "<x>_ln" or "norm<digits>" (GPT-2's ln_1, ln_2, ln_f).
bool is_no_decay_name(const std::string& name);

/// The Trainer's two groups: {weight_decay} for the parameters that decay,
/// {0.0} for the others (is_no_decay_name), in that order, each keeping the
/// order of `named_params` and carrying the names. Parameters that do not
/// require grad, and repeats of a tensor already listed (tied weights), are
/// left out, as the Trainer does.
std::vector<ParamGroup> weight_decay_groups(
    const std::vector<std::pair<std::string, Tensor>>& named_params, double weight_decay);

/// Arguments of get_scheduler (transformers.optimization). Which are needed
/// depends on the schedule; see schedule_factor.
struct ScheduleOptions {
  std::optional<int64_t> num_warmup_steps = std::nullopt;
  std::optional<int64_t> num_training_steps = std::nullopt;
  /// cosine: 0.5 (half a cosine) by default; cosine_with_restarts: 1.
  std::optional<double> num_cycles = std::nullopt;
  /// polynomial: the final learning rate and the decay power.
  double lr_end = 1e-7;
  double power = 1.0;
  /// inverse_sqrt: defaults to num_warmup_steps, or 10000 when that is 0.
  std::optional<int64_t> timescale = std::nullopt;
};

/// The schedule names get_scheduler knows here, in this order: "linear",
/// "cosine", "cosine_with_restarts", "polynomial", "constant",
/// "constant_with_warmup", "inverse_sqrt".
const std::vector<std::string>& schedule_names();

/// The factor transformers' lr_lambda returns at `step` (the learning rate is
/// base_lr * factor), w = num_warmup_steps, n = num_training_steps, and
/// warm-up (all but constant) = step / max(1, w) while step < w:
///   constant                 1
///   constant_with_warmup     1 after warm-up
///   linear                   max(0, (n - step) / max(1, n - w))
///   cosine                   max(0, 0.5 (1 + cos(pi * cycles * 2 * progress))),
///                            progress = (step - w) / max(1, n - w)
///   cosine_with_restarts     0 when progress >= 1, else
///                            max(0, 0.5 (1 + cos(pi * ((cycles * progress) mod 1))))
///   polynomial               ((lr_init - lr_end) (1 - (step - w) / (n - w))^power
///                            + lr_end) / lr_init; lr_end / lr_init past n
///   inverse_sqrt             1 / sqrt((step + timescale - w) / timescale)
/// `lr_init` is used by polynomial only. Throws loom::Error "[lr_scheduler] ..."
/// for an unknown name, a missing num_warmup_steps (all but constant) or
/// num_training_steps (linear, cosine, cosine_with_restarts, polynomial), a
/// negative count or step, polynomial with lr_init <= lr_end or n <= w, or
/// a timescale <= 0.
double schedule_factor(const std::string& name, int64_t step, const ScheduleOptions& options,
                       double lr_init);

/// A learning-rate schedule driving an optimizer's groups, as torch's
/// LambdaLR built by transformers.get_scheduler: construction records each
/// group's current lr as its base lr and sets lr = base * factor(0); each
/// step() advances last_epoch and sets lr = base * factor(last_epoch). Call
/// it after optimizer.step(). The optimizer must outlive the scheduler.
class LRScheduler {
 public:
  /// Throws loom::Error as schedule_factor (checked at construction).
  LRScheduler(const std::string& name, Optimizer& optimizer, ScheduleOptions options = {});

  void step();
  /// The learning rate of each group after the last step (or construction).
  std::vector<double> get_last_lr() const { return last_lr_; }
  /// Number of step() calls since the schedule began (0 after construction).
  int64_t last_epoch() const { return last_epoch_; }
  const std::string& name() const { return name_; }

  /// {"name": ..., "last_epoch": n, "base_lrs": [...], "last_lr": [...]}.
  std::string state_json() const;
  /// Restores last_epoch and base_lrs from state_json() output and sets the
  /// groups' lr to match. Throws loom::Error "[lr_scheduler] ..." for
  /// malformed JSON, a different schedule name, or a different group count.
  void load_state_json(const std::string& json);
  /// state_json() to / from a file (written atomically); loom::Error on I/O.
  void save(const std::string& path) const;
  void load(const std::string& path);

 private:
  void apply_lr();

  std::string name_;
  Optimizer* optimizer_;
  ScheduleOptions options_;
  double lr_init_ = 0;
  int64_t last_epoch_ = 0;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
};

}  // namespace loom::optim
