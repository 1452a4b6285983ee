#pragma once
// Autograd for the torch.ops.rudnn kernels, in C++ like the kernels themselves (a Python autograd
// registration alone costs more than the per-call budget; docs/pytorch.md):
//   - a differentiable op's Autograd kernel is its family's torch::autograd::Function, behind
//     forward_needs_grad(): a call with nothing to differentiate goes straight to the kernel;
//   - a forward-only op gets ForwardOnly, whose outputs (when an input requires grad) carry a node
//     that raises the family's Unsupported error if a backward reaches it — never a silent zero.
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <torch/library.h>

#include <optional>
#include <string>

namespace rudnn::python {

inline bool requires_grad(const at::Tensor& t) { return t.defined() && t.requires_grad(); }
inline bool requires_grad(const std::optional<at::Tensor>& t) { return t && requires_grad(*t); }

// Whether a call must record autograd history: grad mode is on and a tensor input requires grad.
template <class... Tensors>
bool forward_needs_grad(const Tensors&... tensors) {
  return at::GradMode::is_enabled() && (requires_grad(tensors) || ...);
}

// The typed handle of rudnn::<name>, for a call below autograd or from a backward.
template <class Signature>
c10::TypedOperatorHandle<Signature> rudnn_op(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow((std::string("rudnn::") + name).c_str(), "").typed<Signature>();
}

// The Autograd kernel of a forward-only op of `family` (boxed: one for every signature).
torch::CppFunction forward_only(const char* family);

}  // namespace rudnn::python

// Registers a family's kernels, `kernels(torch::Library&)`, for CPU tensors (the host emulation
// device) and CUDA tensors alike: one kernel serves both, its Call picks the queue.
#define RUDNN_TORCH_KERNELS(kernels)                \
  TORCH_LIBRARY_IMPL(rudnn, CPU, m) { kernels(m); } \
  TORCH_LIBRARY_IMPL(rudnn, CUDA, m) { kernels(m); }
