//===- MoEOps.td - MoE routing ------------------------------*- tablegen -*-===//
// SPEC §3 (route) and §4 (route_sigmoid_grouped). The verifiers call rudnn::contracts::check_route
// and check_route_sigmoid_grouped, the same checks the public API runs, then check the result
// types: indices [T, top_k] ui32, weights [T, top_k] of the logits' element type.
#ifndef RUDNN_DIALECT_MOE_OPS_TD
#define RUDNN_DIALECT_MOE_OPS_TD

include "rudnn/Dialect/Rudnn/IR/RudnnBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Rudnn_RouteOp : Rudnn_Op<"route", [Pure]> {
  let summary = "Softmax top-k routing: FP32 softmax over all experts, top-k, optional renormalize";
  let description = [{
    Ties go to the smaller expert index. A row with NaN or +inf, or of all -inf, gets NaN weights
    (and indices 0..top_k-1).
    ```mlir
    %i, %w = rudnn.route %logits {top_k = 8 : i64, renormalize = true}
               : tensor<?x64xbf16> -> tensor<?x8xui32>, tensor<?x8xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$logits, I64Attr:$top_k, BoolAttr:$renormalize,
                       OptionalAttr<DictionaryAttr>:$kernel_config);
  let results = (outs AnyRankedTensor:$indices, AnyRankedTensor:$weights);
  let assemblyFormat = "$logits attr-dict `:` type($logits) `->` type($indices) `,` type($weights)";
  let hasVerifier = 1;
}

def Rudnn_RouteSigmoidGroupedOp : Rudnn_Op<"route_sigmoid_grouped", [Pure]> {
  let summary = "Grouped, limited sigmoid routing (DeepSeek-V3 style)";
  let description = [{
    s = sigmoid(logit) in f32, c = s + bias (selection only); group score = top-two sum or max of c;
    the selected_groups best groups, then the top_k experts by c among them (ties to the smaller
    index); weights = s (optionally renormalized) * scale.
    ```mlir
    %i, %w = rudnn.route_sigmoid_grouped %logits, %bias {top_k = 8 : i64, groups = 8 : i64,
               selected_groups = 4 : i64, group_top_two = true, renormalize = true, scale = 2.5 : f32}
               : tensor<?x256xbf16>, tensor<256xf32> -> tensor<?x8xui32>, tensor<?x8xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$logits, Optional<AnyRankedTensor>:$bias, I64Attr:$top_k,
                       I64Attr:$groups, I64Attr:$selected_groups, BoolAttr:$group_top_two,
                       BoolAttr:$renormalize, F32Attr:$scale, OptionalAttr<DictionaryAttr>:$kernel_config);
  let results = (outs AnyRankedTensor:$indices, AnyRankedTensor:$weights);
  let assemblyFormat = [{
    $logits (`,` $bias^)? attr-dict `:` type($logits) (`,` type($bias)^)? `->` type($indices) `,` type($weights)
  }];
  let hasVerifier = 1;
}

#endif // RUDNN_DIALECT_MOE_OPS_TD
