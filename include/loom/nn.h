// loom::nn — modules with named parameters, as torch.nn: a Module owns
// parameters, buffers and submodules registered under names, so every weight
// has a dotted Hugging Face name ("h.0.attn.c_attn.weight"), and the layers
// transformer models are built from.
//
//   auto lin = std::make_shared<loom::nn::Linear>(32, 64);   // weight [64,32], bias [64]
//   loom::Tensor y = lin->forward(x);                        // x [..., 32] -> [..., 64]
//   for (auto& [name, p] : lin->named_parameters()) ...      // "weight", "bias"
//   lin->to(loom::Device("lazy"));                           // in place; handles stay valid
//
// Parameters are ordinary loom::Tensor leaves with requires_grad. A Tensor is
// a handle, so registering the same handle in two modules ties them (GPT-2's
// lm_head.weight is wte.weight); to() and load_state_dict() change tensors in
// place, keeping every handle — and every tie — valid.
//
// Ordering follows torch: a module's own parameters (in registration order),
// then each submodule's, depth first; state_dict() adds persistent buffers
// after each module's parameters and keeps tied entries under every name.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loom/error.h"
#include "loom/ops.h"
#include "loom/tensor.h"

namespace loom::nn {

/// Named tensors in order (torch's OrderedDict state_dict).
class StateDict {
 public:
  using Entry = std::pair<std::string, Tensor>;
  /// Appends; throws loom::Error "[state_dict] duplicate key 'x'".
  void insert(const std::string& name, const Tensor& tensor);
  /// The tensor named `name`, or nullptr.
  const Tensor* find(const std::string& name) const;
  /// The tensor named `name`; throws loom::Error "[state_dict] no key 'x'".
  const Tensor& at(const std::string& name) const;
  bool contains(const std::string& name) const { return find(name) != nullptr; }
  size_t size() const { return entries_.size(); }
  std::vector<std::string> keys() const;
  std::vector<Entry>::const_iterator begin() const { return entries_.begin(); }
  std::vector<Entry>::const_iterator end() const { return entries_.end(); }

 private:
  std::vector<Entry> entries_;
  std::map<std::string, size_t> index_;
};

/// What load_state_dict did not match (torch's _IncompatibleKeys).
struct LoadResult {
  std::vector<std::string> missing_keys;     // expected but absent (tied aliases excepted)
  std::vector<std::string> unexpected_keys;  // present but not expected
};

/// The base class of every layer and model.
class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// The class name shown in messages ("Linear", "GPT2Block").
  virtual std::string type_name() const { return "Module"; }

  // ---- Registration (torch.nn.Module.register_*). Names are non-empty, have
  // no '.', and are unique among this module's parameters, buffers and
  // children; violations throw loom::Error "[Module] ...". ----

  /// Registers `value` as parameter `name`, marking it requires_grad when
  /// `requires_grad` (floating dtypes only). Returns the slot index for param().
  size_t register_parameter(const std::string& name, Tensor value, bool requires_grad = true);
  /// Registers a buffer (state that is not trained); non-persistent buffers
  /// stay out of state_dict(). Returns the slot index for buffer().
  size_t register_buffer(const std::string& name, Tensor value, bool persistent = true);
  /// Registers a submodule; returns it.
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }
  /// Replaces the tensor of an existing parameter (tying: pass another
  /// module's parameter). Throws loom::Error when `name` is not a parameter
  /// of this module or the shapes differ.
  void set_parameter(const std::string& name, const Tensor& value);

  /// A parameter / buffer of this module by slot (from register_*).
  const Tensor& param(size_t slot) const { return params_[slot].tensor; }
  const Tensor& buffer(size_t slot) const { return buffers_[slot].tensor; }

  // ---- Introspection. ----

  /// (dotted name, tensor) of every parameter, own first then submodules'.
  /// With remove_duplicate (torch's default) a tensor reached again through a
  /// tie is listed once, under its first name.
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool remove_duplicate = true) const;
  std::vector<Tensor> parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_buffers() const;
  /// Direct submodules in registration order.
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  /// This module ("") and every submodule, depth first, pre-order.
  std::vector<std::pair<std::string, Module*>> named_modules();
  /// Parameters and persistent buffers under every name (tied ones too).
  StateDict state_dict() const;
  /// Copies `dict` into this module's tensors in place (converting dtype and
  /// device). Throws loom::Error "[load_state_dict] <type>: ..." listing,
  /// in one message, every shape mismatch and — when `strict` — every
  /// missing and unexpected key. A key whose tensor is tied to a key that is
  /// present does not count as missing (tied weights are stored once).
  LoadResult load_state_dict(const StateDict& dict, bool strict = true);

  // ---- Mode, placement, gradients. ----

  /// Sets training mode here and in every submodule (Dropout reads it).
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  /// Moves every parameter and buffer (and its .grad) to `device` in place:
  /// each tensor keeps its identity, so ties and outside handles (an
  /// optimizer's) stay valid. Syncs lazy tensors being moved off the device.
  void to(const Device& device);
  /// Converts every floating parameter and buffer to `dtype` in place.
  void to(DType dtype);
  /// Sets every parameter's .grad to undefined (set_to_none, torch's default).
  void zero_grad();
  /// The device of the first parameter (cpu when there is none).
  Device device() const;
  /// Total elements of the (deduplicated) parameters; with `only_trainable`,
  /// of those that require grad (transformers' `num_parameters(only_trainable)`).
  int64_t num_parameters(bool only_trainable = false) const;

 protected:
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  /// Unregisters submodule `name`; throws loom::Error "[Module] ..." when absent.
  void remove_child(const std::string& name);

 private:
  struct Slot {
    std::string name;
    Tensor tensor;
    bool persistent = true;
  };
  void check_new_name(const std::string& name) const;
  void collect_named_parameters(const std::string& prefix,
                                std::vector<std::pair<std::string, Tensor>>& out) const;
  void collect_state(const std::string& prefix, StateDict& out) const;
  std::vector<Slot> params_;
  std::vector<Slot> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

/// A list of submodules named "0", "1", ... (torch.nn.ModuleList).
class ModuleList : public Module {
 public:
  std::string type_name() const override { return "ModuleList"; }
  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return items_.size(); }
  Module& operator[](size_t i) const { return *items_.at(i); }
  /// Element `i` as `M`; throws loom::Error when out of range or of another type.
  template <typename M>
  M& at(size_t i) const {
    M* m = i < items_.size() ? dynamic_cast<M*>(items_[i].get()) : nullptr;
    if (!m)
      fail("[ModuleList] no element ", i, " of the requested type (size ", items_.size(), ")");
    return *m;
  }

 private:
  std::vector<std::shared_ptr<Module>> items_;
};

/// RAII: layers constructed in its scope skip random initialization (their
/// parameters are zeros), for from_pretrained, which overwrites them anyway
/// (transformers' no_init_weights). Nests; per thread.
class NoInitGuard {
 public:
  NoInitGuard();
  ~NoInitGuard();
  NoInitGuard(const NoInitGuard&) = delete;
  NoInitGuard& operator=(const NoInitGuard&) = delete;
  static bool active();
};

// ---- Initializers (torch.nn.init); in place, no autograd; draw from loom's
// global Philox generator (manual_seed). ----
void init_normal_(const Tensor& t, double mean, double std);
void init_uniform_(const Tensor& t, double low, double high);
void init_constant_(const Tensor& t, double value);

// ---- Layers. ----

/// An additive term on a linear layer's output: a LinearLayer with an
/// adapter returns base(x) + adapter.forward(x) (LoRA: loom/lora.h).
class LinearAdapter {
 public:
  virtual ~LinearAdapter() = default;
  /// x [..., in] -> [..., out] (f32, the layer's device).
  virtual Tensor forward(const Tensor& x) const = 0;
  /// The submodules the layer registers as its own children, so their
  /// parameters get the layer's prefix ("q_proj.lora_A.weight") and follow
  /// to(), train() and state_dict().
  virtual std::vector<std::pair<std::string, std::shared_ptr<Module>>> modules() const = 0;
};

/// What Linear and Conv1D share: an affine map in -> out whose weight is
/// stored [out, in] (Linear) or [in, out] (Conv1D: PEFT's fan_in_fan_out),
/// plus an optional LinearAdapter added to the output.
class LinearLayer : public Module {
 public:
  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  /// True when the weight is stored [in, out] (GPT-2's Conv1D).
  bool fan_in_fan_out() const { return fan_in_fan_out_; }
  /// The weight parameter ([out, in] or, with fan_in_fan_out, [in, out]).
  const Tensor& weight() const { return param(weight_); }
  /// Attaches `adapter`, registering its modules() as children. Throws
  /// loom::Error "[<type>] ..." when an adapter is attached already or a
  /// name collides.
  void set_adapter(std::shared_ptr<const LinearAdapter> adapter);
  /// Detaches the adapter and unregisters its modules (no-op without one).
  void remove_adapter();
  /// The attached adapter, or nullptr.
  const LinearAdapter* adapter() const { return adapter_.get(); }

 protected:
  LinearLayer(int64_t in, int64_t out, bool fan_in_fan_out)
      : in_(in), out_(out), fan_in_fan_out_(fan_in_fan_out) {}
  /// y [..., out] plus the adapter's term for x (y unchanged without one).
  Tensor add_adapter(const Tensor& x, const Tensor& y) const;
  int64_t in_, out_;
  bool fan_in_fan_out_;
  size_t weight_ = 0;

 private:
  std::shared_ptr<const LinearAdapter> adapter_;
};

/// y = x W^T + b (torch.nn.Linear). weight [out, in], bias [out].
/// Initialized as torch: U(-1/sqrt(in), 1/sqrt(in)) for both.
class Linear : public LinearLayer {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  std::string type_name() const override { return "Linear"; }
  /// x [..., in] -> [..., out]; throws loom::Error "[Linear] ..." on a size mismatch.
  Tensor forward(const Tensor& x) const;
  /// Undefined when constructed with bias = false.
  Tensor bias() const { return has_bias_ ? param(bias_) : Tensor(); }

 private:
  size_t bias_ = 0;
  bool has_bias_;
};

/// GPT-2's Conv1D (transformers.pytorch_utils.Conv1D): a linear layer with
/// the weight stored [in, out]: y = x W + b. Initialized normal(0, 0.02),
/// bias zeros (transformers' _init_weights).
class Conv1D : public LinearLayer {
 public:
  /// Argument order as transformers: Conv1D(nf = out_features, nx = in_features).
  Conv1D(int64_t nf, int64_t nx);
  std::string type_name() const override { return "Conv1D"; }
  /// x [..., nx] -> [..., nf].
  Tensor forward(const Tensor& x) const;
  const Tensor& bias() const { return param(bias_); }

 private:
  size_t bias_ = 0;
};

/// Table lookup (torch.nn.Embedding). weight [num, dim], initialized
/// normal(0, 1) with the padding row zeroed. With padding_idx, positions
/// holding that id get no gradient (the row is never trained), as torch.
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim,
            std::optional<int64_t> padding_idx = std::nullopt);
  std::string type_name() const override { return "Embedding"; }
  /// ids [...] (i32/i64, each in [0, num)) -> [..., dim]; out-of-range ids
  /// throw loom::Error from the embedding op.
  Tensor forward(const Tensor& ids) const;
  const Tensor& weight() const { return param(weight_); }
  std::optional<int64_t> padding_idx() const { return padding_idx_; }
  int64_t num_embeddings() const { return num_; }
  /// Sets the padding row of the weight to zeros (no-op without padding_idx).
  void zero_padding_row() const;

 private:
  int64_t num_, dim_;
  std::optional<int64_t> padding_idx_;
  size_t weight_ = 0;
};

/// torch.nn.LayerNorm over the last dim: weight ones, bias zeros.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t dim, double eps = 1e-5);
  std::string type_name() const override { return "LayerNorm"; }
  /// x [..., dim] -> [..., dim].
  Tensor forward(const Tensor& x) const;
  const Tensor& weight() const { return param(weight_); }
  const Tensor& bias() const { return param(bias_); }
  double eps() const { return eps_; }

 private:
  int64_t dim_;
  double eps_;
  size_t weight_ = 0, bias_ = 0;
};

/// Inverted dropout (torch.nn.Dropout) through loom::dropout: active only in
/// training mode and when p > 0. Throws loom::Error unless 0 <= p < 1.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  std::string type_name() const override { return "Dropout"; }
  Tensor forward(const Tensor& x) const;
  double p() const { return p_; }

 private:
  double p_;
};

/// Applies transformers' activation `name` (ACT2FN): "gelu" (exact, erf),
/// "gelu_new" / "gelu_pytorch_tanh" / "gelu_fast" (the tanh approximation
/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))), "quick_gelu"
/// (x sigmoid(1.702 x)), "relu", "silu" / "swish", "tanh". Throws
/// loom::Error "[activation] unknown activation 'x'".
Tensor activation(const std::string& name, const Tensor& x);

/// An activation as a module (no parameters).
class Activation : public Module {
 public:
  /// Checks the name (see activation()).
  explicit Activation(std::string name);
  std::string type_name() const override { return "Activation"; }
  Tensor forward(const Tensor& x) const { return activation(name_, x); }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

/// GELU as a module (torch.nn.GELU): approximate "none" or "tanh".
class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none");
  std::string type_name() const override { return "GELU"; }
  Tensor forward(const Tensor& x) const { return gelu(x, approximate_); }

 private:
  std::string approximate_;
};

/// Options of multi_head_attention().
struct AttentionOptions {
  /// Optional mask broadcasting to [B, H, T, S]: bool (true = attend) or
  /// float (added to the scores). Models pass a key-padding mask [B,1,1,S].
  Tensor mask;
  bool causal = false;     // query i attends to keys j <= i
  double scale = 0.0;      // 0 = 1/sqrt(head_dim)
  double dropout_p = 0.0;  // on the attention probabilities, in training only
  bool training = false;
};

/// Multi-head scaled-dot-product attention: q [B,T,C], k and v [B,S,C] are
/// split into `num_heads` heads of C/num_heads, attended with
/// loom::scaled_dot_product_attention (in training, with dropout_p on the
/// probabilities inside the op: the keep decisions of transformers' eager
/// dropout(softmax(...)) for the same generator state), and merged back to
/// [B,T,C]. Throws loom::Error
/// "[attention] ..." when C is not divisible by num_heads or shapes differ.
Tensor multi_head_attention(const Tensor& q, const Tensor& k, const Tensor& v, int64_t num_heads,
                            const AttentionOptions& options = {});

/// torch.nn.MultiheadAttention (batch_first, bias, kdim = vdim = embed_dim):
/// in_proj_weight [3C, C], in_proj_bias [3C], out_proj (Linear C -> C).
/// Initialized as torch: xavier_uniform in_proj, zero biases.
class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout = 0.0);
  std::string type_name() const override { return "MultiheadAttention"; }
  /// query [B,T,C], key/value [B,S,C] -> [B,T,C]. key_padding_mask [B,S]
  /// (bool, true = ignore that key, as torch) is optional.
  Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value,
                 const Tensor& key_padding_mask = Tensor(), bool causal = false) const;

 private:
  int64_t embed_dim_, num_heads_;
  double dropout_;
  size_t in_w_ = 0, in_b_ = 0;
  std::shared_ptr<Linear> out_proj_;
};

}  // namespace loom::nn
