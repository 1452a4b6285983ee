#pragma once
// MoE ops → rudnn.launch ops of the templates/rudnn/moe/ kernels: routing (MoEToLaunch.cpp),
// dispatch and combine (DispatchToLaunch.cpp), the SwiGLU experts (ExpertsToLaunch.cpp). Each op
// must carry a kernel_config.
#include "mlir/IR/PatternMatch.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"

namespace rudnn::compiler {

// Replaces `route.op` (which must carry a kernel_config) by one rudnn.launch with two results
// (indices, weights).
mlir::LogicalResult lowerRouteOpToLaunch(mlir::RewriterBase& rewriter, const dialect::RouteOpView& route);

// rudnn.dispatch → dispatch_rank (one block) then dispatch_scatter.
mlir::LogicalResult lowerDispatchOpToLaunch(mlir::RewriterBase& rewriter, dialect::DispatchOp op);
// rudnn.combine → one combine launch.
mlir::LogicalResult lowerCombineOpToLaunch(mlir::RewriterBase& rewriter, dialect::CombineOp op);
// rudnn.swiglu_experts → gate/up (into a temporary) then down, scalar or tensor-core kernels.
mlir::LogicalResult lowerExpertsOpToLaunch(mlir::RewriterBase& rewriter, dialect::SwiGluExpertsOp op);

// Dispatch's scatter and combine (one block per row of h = rowType's dim 1): the widest legal
// vector (1 when h is dynamic), then min(256, max(64, next_pow2(ceil(h / vector_width)))) threads
// (1024 vectors assumed for a dynamic h). Shared by both heuristics (DispatchKernelModel.cpp).
dialect::moe_config::RowCopyConfig heuristicRowCopyConfig(mlir::RankedTensorType rowType);

// Dynamic shared memory of the grouped routing kernel: rows_per_block × (experts + 2 × groups) floats.
std::int64_t groupedRouteSharedBytes(std::int64_t rowsPerBlock, std::int64_t experts, std::int64_t groups);

}  // namespace rudnn::compiler
