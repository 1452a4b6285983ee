#pragma once
// The MoE training ops → one rudnn.launch each of templates/rudnn/moe/router_weights.cuh
// (router_weights, router_backward) and combine_backward.cuh (combine_backward, dispatch_backward).
#include "mlir/IR/PatternMatch.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"

namespace rudnn::compiler {

mlir::LogicalResult lowerMoETrainingOpToLaunch(mlir::RewriterBase& rewriter, mlir::Operation* op);

}  // namespace rudnn::compiler
