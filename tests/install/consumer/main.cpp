// tests/install/consumer/main.cpp: a program outside loom's tree that uses
// only installed headers and libloom. It computes d/dx sum(x*x) = 2x on the
// lazy device (tracing, compiling and running a graph, so oneDNN/OpenMP are
// linked and work) and lists the model registry (static registration of
// GPT-2 etc. survives a static link). Prints one line the test checks.
#include <cstdio>

#include "loom/device.h"
#include "loom/lazy.h"
#include "loom/model_registry.h"
#include "loom/ops.h"
#include "loom/tensor.h"

int main() {
  loom::Device lazy("lazy");
  loom::Tensor x = loom::tensor({1, 2, 3}, {3}, lazy).requires_grad_();
  loom::sum(x * x).backward();
  loom::lazy::mark_step();
  std::vector<float> g = x.grad().to(loom::Device("cpu")).to_vector<float>();
  std::printf("consumer: grad %g %g %g; models %s\n", g[0], g[1], g[2],
              loom::model_type_names().c_str());
  return 0;
}
