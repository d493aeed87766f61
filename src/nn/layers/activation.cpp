// transformers' activations by name (activations.py ACT2FN) and GELU.
// gelu_new / gelu_pytorch_tanh / gelu_fast are one function, the tanh
// approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// (Hendrycks & Gimpel 2016), computed by loom's gelu(x, "tanh").
#include "loom/error.h"
#include "loom/nn.h"

namespace loom::nn {

Tensor activation(const std::string& name, const Tensor& x) {
  if (name == "gelu") return gelu(x, "none");
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast")
    return gelu(x, "tanh");
  if (name == "quick_gelu") return x * sigmoid(x * 1.702);
  if (name == "relu") return relu(x);
  if (name == "silu" || name == "swish") return x * sigmoid(x);
  if (name == "tanh") return tanh(x);
  fail("[activation] unknown activation '", name,
       "' (known: gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, quick_gelu, relu, silu, swish, "
       "tanh)");
}

Activation::Activation(std::string name) : name_(std::move(name)) {
  activation(name_, zeros({1}));  // validates the name now, not at the first forward
}

GELU::GELU(std::string approximate) : approximate_(std::move(approximate)) {
  LOOM_CHECK(approximate_ == "none" || approximate_ == "tanh",
             "[GELU] approximate must be 'none' or 'tanh', got '", approximate_, "'");
}

}  // namespace loom::nn
