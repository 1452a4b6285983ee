#pragma once
// rudnn.gated_delta → one rudnn.launch of rudnn::gated_delta::gated_delta_recurrent (chunk_size 0)
// or gated_delta_chunked (templates/rudnn/gated_delta/). The op must carry a kernel_config.
#include "mlir/IR/PatternMatch.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"

namespace rudnn::compiler {

mlir::LogicalResult lowerGatedDeltaOpToLaunch(mlir::RewriterBase& rewriter, dialect::GatedDeltaOp op);

}  // namespace rudnn::compiler
