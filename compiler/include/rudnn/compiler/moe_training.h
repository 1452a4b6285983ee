#pragma once
// The compiler's entries for the MoE training ops (the ops layer's training entries,
// rudnn-precompile). Every extent is dynamic in the IR (the kernels take them at run time). No MLIR
// in this header.
#include <optional>

#include "contracts/moe_training.h"
#include "rudnn/compiler/pipeline.h"

namespace rudnn::compiler {

// rudnn.router_weights (no grad_weights) or rudnn.router_backward. Slots: logits 0, indices 1,
// [grad_weights 2], then the result.
struct RouterWeightsRequest {
  contracts::RouterWeightsSignature signature;
  std::optional<KernelConfig> config;
};
Result<LoweredOp, RuntimeError> lower_router_weights(const RouterWeightsRequest& request, const Target& target);

// rudnn.combine_backward. Slots: expert_rows 0, grad_output 1, slots 2, weights 3, dexpert 4, dweights 5.
struct CombineBackwardRequest {
  contracts::CombineBackwardSignature signature;
  bool plane = false;  // CombineGradientStrategy::Plane
  std::optional<KernelConfig> config;
};
Result<LoweredOp, RuntimeError> lower_combine_backward(const CombineBackwardRequest& request, const Target& target);

// rudnn.dispatch_backward. Slots: drows 0, slots 1, dinput 2.
struct DispatchBackwardRequest {
  contracts::DispatchBackwardSignature signature;
  std::optional<KernelConfig> config;
};
Result<LoweredOp, RuntimeError> lower_dispatch_backward(const DispatchBackwardRequest& request, const Target& target);

// rudnn.swiglu_experts_backward. Slots: rows 0, offsets 1, slots 2, gate 3, up 4, down 5, dexpert 6,
// dinput 7, dgate 8, dup 9, ddown 10, then the temporaries (row order, dA, dB, Hh). The strategy as
// the op takes it (Auto: tensor cores where the contract allows them on the target).
struct ExpertsBackwardRequest {
  contracts::ExpertsBackwardSignature signature;
  contracts::ExpertsStrategy strategy = contracts::ExpertsStrategy::Scalar;
  std::optional<KernelConfig> config;
};
Result<LoweredOp, RuntimeError> lower_experts_backward(const ExpertsBackwardRequest& request, const Target& target);

}  // namespace rudnn::compiler
