#pragma once
// MoE routing ops → rudnn.launch of rudnn::moe::route_softmax_topk / route_sigmoid_grouped
// (templates/rudnn/moe/).
#include "mlir/IR/PatternMatch.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"

namespace rudnn::compiler {

// Replaces `route.op` (which must carry a kernel_config) by one rudnn.launch with two results
// (indices, weights).
mlir::LogicalResult lowerRouteOpToLaunch(mlir::RewriterBase& rewriter, const dialect::RouteOpView& route);

// Dynamic shared memory of the grouped routing kernel: rows_per_block × (experts + 2 × groups) floats.
std::int64_t groupedRouteSharedBytes(std::int64_t rowsPerBlock, std::int64_t experts, std::int64_t groups);

}  // namespace rudnn::compiler
