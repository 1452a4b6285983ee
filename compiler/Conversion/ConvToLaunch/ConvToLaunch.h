#pragma once
// rudnn.conv_forward / conv_data_backward / conv_weight_backward → rudnn.launch ops of the
// templates in templates/rudnn/conv/ (direct.cuh, depthwise.cuh, implicit_gemm.cuh, layout.cuh).
// The op must carry a kernel_config; every extent but the batch must be static.
#include "mlir/IR/PatternMatch.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"

namespace rudnn::compiler {

mlir::LogicalResult lowerConvOpToLaunch(mlir::RewriterBase& rewriter, mlir::Operation* op);

}  // namespace rudnn::compiler
