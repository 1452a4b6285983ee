#include "autograd.h"

#include <ATen/core/stack.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/custom_function.h>

#include <memory>
#include <vector>

#include "call.h"

namespace rudnn::python {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// A node over a forward-only op's outputs: applying it is the error.
struct NoBackward : torch::autograd::Function<NoBackward> {
  // `outputs` were computed below autograd; returned here, they get this node as their grad_fn.
  static variable_list forward(AutogradContext* ctx, at::TensorList inputs, const variable_list* outputs,
                               const char* family, const std::string* op) {
    ctx->saved_data["family"] = std::string(family);
    ctx->saved_data["op"] = *op;
    return *outputs;
  }
  static variable_list backward(AutogradContext* ctx, variable_list) {
    const std::string family = ctx->saved_data["family"].toStringRef();
    raise(family.c_str(), Error(ErrorKind::Unsupported, ctx->saved_data["op"].toStringRef(), "an op with a backward",
                                "forward-only (the library has no backward for it; docs/pytorch.md)"));
  }
};

bool differentiable(const at::Tensor& t) { return t.defined() && at::isFloatingType(t.scalar_type()); }

class ForwardOnly final : public c10::OperatorKernel {
 public:
  explicit ForwardOnly(const char* family) : family_(family) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
    const std::size_t arguments = op.schema().arguments().size();
    std::vector<at::Tensor> inputs;
    if (at::GradMode::is_enabled()) {
      for (const c10::IValue& value : torch::jit::last(*stack, arguments))
        if (value.isTensor() && requires_grad(value.toTensor())) inputs.push_back(value.toTensor());
    }
    {
      at::AutoDispatchBelowADInplaceOrView below;
      op.redispatchBoxed(keys & c10::after_ADInplaceOrView_keyset, stack);
    }
    if (inputs.empty()) return;
    const std::size_t returns = op.schema().returns().size();
    const std::size_t first = stack->size() - returns;
    variable_list outputs;
    std::vector<std::size_t> slots;
    for (std::size_t i = first; i < stack->size(); ++i) {
      if ((*stack)[i].isTensor() && differentiable((*stack)[i].toTensor())) {
        outputs.push_back((*stack)[i].toTensor());
        slots.push_back(i);
      }
    }
    if (outputs.empty()) return;
    // The op's name without its namespace: the argument the error names.
    const std::string& qualified = op.schema().name();
    const std::string name = qualified.substr(qualified.find("::") + 2);
    variable_list tracked = NoBackward::apply(at::TensorList(inputs), &outputs, family_, &name);
    for (std::size_t i = 0; i < slots.size(); ++i) (*stack)[slots[i]] = tracked[i];
  }

 private:
  const char* family_;
};

}  // namespace

torch::CppFunction forward_only(const char* family) {
  return torch::CppFunction::makeFromBoxedFunctor(std::make_unique<ForwardOnly>(family));
}

}  // namespace rudnn::python
