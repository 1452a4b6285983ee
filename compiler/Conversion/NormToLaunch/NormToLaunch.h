#pragma once
// Normalization family → rudnn.launch of rudnn::norm::row_norm (templates/rudnn/norm/row_norm.cuh).
#include "mlir/IR/PatternMatch.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"

namespace rudnn::compiler {

// Replaces `norm.op` (which must carry a kernel_config) by one rudnn.launch.
mlir::LogicalResult lowerNormOpToLaunch(mlir::RewriterBase& rewriter, const dialect::NormOpView& norm);

}  // namespace rudnn::compiler
