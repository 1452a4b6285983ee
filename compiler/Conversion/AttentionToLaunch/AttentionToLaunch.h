#pragma once
// rudnn.attention → the launches of the strategy its kernel_config names (templates/rudnn/attention/):
// flash_mma and flash_unit one fused kernel each; fallback scores → softmax (in place) → weighted sum
// over an FP32 workspace [B, Hq, Tq, Tk] that is a call-scoped temporary.
#include "mlir/IR/PatternMatch.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"

namespace rudnn::compiler {

mlir::LogicalResult lowerAttentionOpToLaunch(mlir::RewriterBase& rewriter, dialect::AttentionOp op);

}  // namespace rudnn::compiler
