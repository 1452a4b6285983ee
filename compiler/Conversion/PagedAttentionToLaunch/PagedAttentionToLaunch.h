#pragma once
// rudnn.paged_attention / rudnn.paged_mla → paged_attention_mma / paged_mla_mma (tensor_core 1; with wgmma 1
// paged_attention_wgmma / paged_mla_wgmma) or paged_attention_unit (unsplit:
// straight to the output; split: FP32 partials into a workspace temporary, then paged_merge), and rudnn.paged_append →
// paged_copy (key cache, value cache: no-ops when the output is the input) then paged_append, and
// rudnn.paged_attention_backward / rudnn.paged_mla_backward → paged_zero (the FP32 history scratch),
// paged_attention_backward_unit, paged_round_gradients (templates/rudnn/paged/).
#include "mlir/IR/PatternMatch.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"

namespace rudnn::compiler {

mlir::LogicalResult lowerPagedAttentionOpToLaunch(mlir::RewriterBase& rewriter, mlir::Operation* op);
mlir::LogicalResult lowerPagedAppendOpToLaunch(mlir::RewriterBase& rewriter, dialect::PagedAppendOp op);
mlir::LogicalResult lowerPagedBackwardOpToLaunch(mlir::RewriterBase& rewriter, mlir::Operation* op);

}  // namespace rudnn::compiler
