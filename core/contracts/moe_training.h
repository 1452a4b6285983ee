#pragma once
// The MoE first-order training contracts of SPEC §10 (this slice: router weights and their
// backward, combine and dispatch backward), written once over plain shapes and dtypes: the public
// entries (rudnn/moe.h) and the dialect verifiers (MoETrainingOps.td) both call them.
#include <cstdint>
#include <optional>
#include <string>

#include "contracts/moe.h"

namespace rudnn::contracts {

inline constexpr std::int64_t kMaxRouterTopK = 64;

enum class RouterScore { Softmax, Sigmoid };

// selected_router_weights (grad_weights absent) and selected_router_backward (present).
struct RouterWeightsSignature {
  MoeOperand logits;                       // [T, E] F32/F16/BF16
  MoeOperand indices;                      // [T, top_k] U32/I32/I64
  std::optional<MoeOperand> grad_weights;  // [T, top_k] F32
  RouterScore scoring = RouterScore::Softmax;
  bool renormalize = true;
  double scale = 1.0;
};
std::optional<MoeError> check_router_weights(const RouterWeightsSignature& sig);

// Dispatched::combine_backward: the combine's operands plus grad_output [T, H] (expert_output's
// dtype).
struct CombineBackwardSignature {
  CombineSignature combine;
  MoeOperand grad_output;
};
std::optional<MoeError> check_combine_backward(const CombineBackwardSignature& sig);

// Dispatched::dispatch_backward: drows [T·top_k, H] float, slots U32 [T, top_k].
struct DispatchBackwardSignature {
  MoeOperand drows, slots;
};
std::optional<MoeError> check_dispatch_backward(const DispatchBackwardSignature& sig);

// SwiGluTrainingCache::backward: the experts call it was made from plus dexpert [N, H] in the
// weights' dtype.
struct ExpertsBackwardSignature {
  ExpertsSignature experts;
  MoeOperand slots;  // U32 [T, top_k], the dispatch's: T·top_k = N
  MoeOperand dexpert;
};
std::optional<MoeError> check_experts_backward(const ExpertsBackwardSignature& sig);

std::string describe_call(const RouterWeightsSignature& sig);

}  // namespace rudnn::contracts
