//===- MoEOps.td - MoE routing, dispatch, experts, combine --*- tablegen -*-===//
// SPEC §3 (route, dispatch, experts, combine) and §4 (route_sigmoid_grouped). The verifiers call the
// contracts of core/contracts/moe (check_route, check_dispatch, ...), the same checks the public
// API runs, then check the result types and the kernel_config.
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

def Rudnn_DispatchOp : Rudnn_Op<"dispatch", [Pure]> {
  let summary = "Groups token rows per expert, compactly (no capacity limit, no dropped token)";
  let description = [{
    `rows[slots[t, j]] = input[t]` for every token t and choice j; expert e owns rows
    [offsets[e], offsets[e+1]) (offsets: exclusive prefix sum of the per-expert counts, length
    experts + 1). The order of rows inside an expert is not fixed (atomic ranking); `slots` restores it.
    ```mlir
    %rows, %offsets, %slots = rudnn.dispatch %input, %indices {experts = 64 : i64}
        : tensor<?x4096xbf16>, tensor<?x8xui32> -> tensor<?x4096xbf16>, tensor<65xui32>, tensor<?x8xui32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$indices, I64Attr:$experts,
                       OptionalAttr<DictionaryAttr>:$kernel_config);
  let results = (outs AnyRankedTensor:$rows, AnyRankedTensor:$offsets, AnyRankedTensor:$slots);
  let assemblyFormat = [{
    $input `,` $indices attr-dict `:` type($input) `,` type($indices) `->` type($rows) `,` type($offsets) `,` type($slots)
  }];
  let hasVerifier = 1;
}

def Rudnn_SwiGluExpertsOp : Rudnn_Op<"swiglu_experts", [Pure]> {
  let summary = "SwiGLU experts over compact per-expert rows (grouped GEMMs)";
  let description = [{
    For a row r of expert e: `out[r] = down_e · (silu(gate_e · x_r) ⊙ (up_e · x_r))`, FP32
    accumulation, the intermediate stored once in the weights' dtype. gate, up [E, I, H]; down
    [E, H, I]. `strategy` is "scalar", "tensor_core" or "auto"; rudnn-select-kernel-config resolves
    "auto" (TensorCore where supported) and the kernel_config's `tensor_core` key records the choice.
    ```mlir
    %out = rudnn.swiglu_experts %rows, %offsets, %gate, %up, %down {strategy = "auto"}
        : tensor<?x4096xbf16>, tensor<65xui32>, tensor<64x1408x4096xbf16>, tensor<64x1408x4096xbf16>,
          tensor<64x4096x1408xbf16> -> tensor<?x4096xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$rows, AnyRankedTensor:$offsets, AnyRankedTensor:$gate,
                       AnyRankedTensor:$up, AnyRankedTensor:$down, StrAttr:$strategy,
                       OptionalAttr<DictionaryAttr>:$kernel_config);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = [{
    $rows `,` $offsets `,` $gate `,` $up `,` $down attr-dict `:` type($rows) `,` type($offsets) `,`
    type($gate) `,` type($up) `,` type($down) `->` type($output)
  }];
  let hasVerifier = 1;
}

def Rudnn_CombineOp : Rudnn_Op<"combine", [Pure]> {
  let summary = "Restores token order and sums the expert rows with the routing weights";
  let description = [{
    `out[t] = Σ_j weights[t, j] · expert_rows[slots[t, j]]`, summed in FP32 in j order
    (deterministic), converted to the rows' dtype.
    ```mlir
    %y = rudnn.combine %expert_rows, %slots, %weights
        : tensor<?x4096xbf16>, tensor<?x8xui32>, tensor<?x8xf32> -> tensor<?x4096xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$expert_rows, AnyRankedTensor:$slots, AnyRankedTensor:$weights,
                       OptionalAttr<DictionaryAttr>:$kernel_config);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = [{
    $expert_rows `,` $slots `,` $weights attr-dict `:` type($expert_rows) `,` type($slots) `,` type($weights)
    `->` type($output)
  }];
  let hasVerifier = 1;
}

#endif // RUDNN_DIALECT_MOE_OPS_TD
