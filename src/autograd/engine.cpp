// Grad mode, recording, and the backward pass.
#include "autograd/engine.h"

#include <unordered_map>
#include <unordered_set>

#include "lazy/dispatch.h"
#include "lazy/tensor_impl.h"
#include "loom/error.h"
#include "loom/lazy.h"
#include "loom/ops.h"

namespace loom {
namespace {
thread_local bool g_grad_enabled = true;
}
bool is_grad_enabled() { return g_grad_enabled; }
void set_grad_enabled(bool enabled) { g_grad_enabled = enabled; }
NoGradGuard::NoGradGuard() : previous_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = previous_; }
}  // namespace loom

namespace loom::autograd {

Tensor apply(ops::OpKind op, const std::vector<Tensor>& inputs, const ops::Attrs& attrs,
             const Device& device) {
  Tensor out = lazy::apply_op(op, inputs, attrs, device);
  if (!is_grad_enabled() || ops::has_trait(op, ops::kNondiff)) return out;
  bool needs = false;
  for (const Tensor& t : inputs) needs = needs || t.requires_grad();
  if (!needs) return out;
  auto node = std::make_shared<GradNode>();
  node->op = op;
  node->attrs = attrs;
  node->inputs = inputs;
  for (const Tensor& t : inputs) node->versions.push_back(t.impl()->version);
  node->output = out.detach();
  out.impl()->requires_grad = true;
  out.impl()->grad_fn = std::move(node);
  return out;
}

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  int64_t lead = grad.dim() - static_cast<int64_t>(shape.size());
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < grad.dim(); ++d)
    if (d < lead || shape[d - lead] == 1) axes.push_back(d);
  return reshape(sum(grad, axes, true), shape);
}

namespace {

// `keep` holds every node until backward ends: releasing a node's inputs
// may drop the last handle to a node still to be processed.
std::vector<GradNode*> topo_order(GradNode* root, std::vector<std::shared_ptr<GradNode>>* keep) {
  std::vector<GradNode*> order;
  std::unordered_set<GradNode*> seen{root};
  std::vector<std::pair<GradNode*, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->inputs.size()) {
      const std::shared_ptr<GradNode>& fn = node->inputs[next++].impl()->grad_fn;
      GradNode* child = fn.get();
      if (child && seen.insert(child).second) {
        keep->push_back(fn);
        stack.push_back({child, 0});
      }
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }
  return order;  // children before parents
}

void accumulate(Tensor& slot, const Tensor& g) { slot = slot.defined() ? add(slot, g) : g; }

// Frees what the node saved for backward (its rule ran).
void release(GradNode& node) {
  node.inputs.clear();
  node.output = Tensor();
  node.released = true;
}

}  // namespace

void backward(const Tensor& root, const Tensor& gradient) {
  LOOM_CHECK(root.requires_grad(), "[backward] tensor does not require grad");
  NoGradGuard no_grad;
  lazy::RematBackwardScope remat_backward;  // marks backward ops after checkpointed layers
  if (!root.impl()->grad_fn) {
    accumulate(root.impl()->grad, gradient);
    return;
  }
  std::unordered_map<GradNode*, Tensor> grads;
  grads[root.impl()->grad_fn.get()] = gradient;
  std::vector<std::shared_ptr<GradNode>> keep{root.impl()->grad_fn};
  std::vector<GradNode*> order = topo_order(root.impl()->grad_fn.get(), &keep);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    GradNode* node = *it;
    LOOM_CHECK(!node->released, "[backward] trying to backward through the graph a second time (",
               ops::op_name(node->op),
               " was freed by an earlier backward(); run the forward again)");
    Tensor g = grads[node];
    grads.erase(node);
    if (!g.defined()) {
      release(*node);
      continue;
    }
    for (size_t i = 0; i < node->inputs.size(); ++i)
      LOOM_CHECK(node->inputs[i].impl()->version == node->versions[i], "[backward] operand ", i,
                 " of ", ops::op_name(node->op),
                 " was modified in place after it was used; backward needs its old value");
    std::vector<Tensor> in_grads = grad_rule(node->op)(*node, g);
    for (size_t i = 0; i < node->inputs.size() && i < in_grads.size(); ++i) {
      const Tensor& input = node->inputs[i];
      if (!input.requires_grad() || !in_grads[i].defined()) continue;
      if (GradNode* fn = input.impl()->grad_fn.get()) accumulate(grads[fn], in_grads[i]);
      else accumulate(input.impl()->grad, in_grads[i]);
    }
    release(*node);
  }
}

}  // namespace loom::autograd
