// LoraAdapter (loom/lora.h): the low-rank update of one linear layer,
// lora_B(lora_A(dropout(x))) * (lora_alpha / r), as PEFT's lora.Linear
// (peft/tuners/lora/layer.py, Linear.forward and get_delta_weight; Hu et al.
// 2021, eq. 3). Assumes the wrapped layer adds this term to its own output
// (nn::LinearLayer::add_adapter) and that lora_A / lora_B are registered
// under the layer as children "lora_A", "lora_B", "lora_dropout".
#include "loom/error.h"
#include "loom/lora.h"

namespace loom {

LoraAdapter::LoraAdapter(int64_t in_features, int64_t out_features, const LoraConfig& config)
    : scaling_(config.scaling()) {
  config.validate();
  // lora_A: nn.Linear's kaiming_uniform_(a=sqrt(5)) (nn::Linear's constructor
  // draws it); lora_B: zeros (PEFT's reset_lora_parameters, init True).
  lora_A_ = std::make_shared<nn::Linear>(in_features, config.r, /*bias=*/false);
  lora_B_ = std::make_shared<nn::Linear>(config.r, out_features, /*bias=*/false);
  nn::init_constant_(lora_B_->weight(), 0.0);
  dropout_ = std::make_shared<nn::Dropout>(config.lora_dropout);
}

Tensor LoraAdapter::forward(const Tensor& x) const {
  return lora_B_->forward(lora_A_->forward(dropout_->forward(x))) * scaling_;
}

std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>> LoraAdapter::modules() const {
  return {{"lora_A", lora_A_}, {"lora_B", lora_B_}, {"lora_dropout", dropout_}};
}

Tensor LoraAdapter::delta_weight() const {
  NoGradGuard no_grad;
  return matmul(lora_B_->weight(), lora_A_->weight()) * scaling_;  // [out,r] @ [r,in]
}

}  // namespace loom
