//===- MoETrainingOps.td - MoE first-order training ----------*- tablegen -*-===//
// SPEC §10: the router weights of a given selection and their gradient, and the gradients of
// combine and dispatch. The verifiers call core/contracts/moe_training (the checks the public API
// runs), then the result types and the kernel_config (MoETrainingConfig.h).
#ifndef RUDNN_DIALECT_MOE_TRAINING_OPS_TD
#define RUDNN_DIALECT_MOE_TRAINING_OPS_TD

include "rudnn/Dialect/Rudnn/IR/RudnnBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// Router options: `scoring` "softmax" (softmax over all experts, the selected entries) or "sigmoid",
// `renormalize` over the selected, then `scale`.
class Rudnn_RouterTrainingOp<string mnemonic> : Rudnn_Op<mnemonic, [Pure]> {
  dag routerOptions = (ins StrAttr:$scoring, BoolAttr:$renormalize, F32Attr:$scale,
                           OptionalAttr<DictionaryAttr>:$kernel_config);
  let hasVerifier = 1;
}

def Rudnn_RouterWeightsOp : Rudnn_RouterTrainingOp<"router_weights"> {
  let summary = "The FP32 weights of given selected experts (selected_router_weights)";
  let description = [{
    logits [T, E] (f32/f16/bf16), indices [T, top_k] (ui32/i32/i64) → f32 [T, top_k]. A row with an
    index out of [0, E) is NaN.
    ```mlir
    %w = rudnn.router_weights %logits, %indices {scoring = "softmax", renormalize = true, scale = 1.0 : f32}
           : tensor<?x64xbf16>, tensor<?x8xui32> -> tensor<?x8xf32>
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$logits, AnyRankedTensor:$indices), routerOptions);
  let results = (outs AnyRankedTensor:$weights);
  let assemblyFormat = "$logits `,` $indices attr-dict `:` type($logits) `,` type($indices) `->` type($weights)";
}

def Rudnn_RouterBackwardOp : Rudnn_RouterTrainingOp<"router_backward"> {
  let summary = "The logits gradient of rudnn.router_weights (selected_router_backward)";
  let description = [{
    logits [T, E], indices [T, top_k], grad_weights f32 [T, top_k] → [T, E] in the logits dtype;
    repeated indices add up; a row with an illegal index is NaN.
  }];
  let arguments = !con((ins AnyRankedTensor:$logits, AnyRankedTensor:$indices, AnyRankedTensor:$grad_weights),
                       routerOptions);
  let results = (outs AnyRankedTensor:$grad_logits);
  let assemblyFormat = [{
    $logits `,` $indices `,` $grad_weights attr-dict `:` type($logits) `,` type($indices) `,` type($grad_weights)
    `->` type($grad_logits)
  }];
}

def Rudnn_CombineBackwardOp : Rudnn_Op<"combine_backward", [Pure]> {
  let summary = "The gradients of rudnn.combine: dexpert rows and FP32 dweights";
  let description = [{
    expert_rows [T·top_k, H], grad_output [T, H] (the rows' dtype), slots ui32 [T, top_k], weights
    [T, top_k] → dexpert [T·top_k, H] = weights[t, j]·grad_output[t] at slots[t, j], dweights f32
    [T, top_k] = Σ_h grad_output[t, h]·expert_rows[slots[t, j], h]. `strategy` "serial" or "plane"
    (the dweights reduction over H).
  }];
  let arguments = (ins AnyRankedTensor:$expert_rows, AnyRankedTensor:$grad_output, AnyRankedTensor:$slots,
                       AnyRankedTensor:$weights, StrAttr:$strategy, OptionalAttr<DictionaryAttr>:$kernel_config);
  let results = (outs AnyRankedTensor:$dexpert, AnyRankedTensor:$dweights);
  let assemblyFormat = [{
    $expert_rows `,` $grad_output `,` $slots `,` $weights attr-dict `:` type($expert_rows) `,` type($grad_output) `,`
    type($slots) `,` type($weights) `->` type($dexpert) `,` type($dweights)
  }];
  let hasVerifier = 1;
}

def Rudnn_DispatchBackwardOp : Rudnn_Op<"dispatch_backward", [Pure]> {
  let summary = "The gradient of rudnn.dispatch: each token's selected rows summed back";
  let description = [{
    drows [T·top_k, H], slots ui32 [T, top_k] → [T, H] in drows' dtype (FP32 sum in j order, no weight).
  }];
  let arguments = (ins AnyRankedTensor:$drows, AnyRankedTensor:$slots, OptionalAttr<DictionaryAttr>:$kernel_config);
  let results = (outs AnyRankedTensor:$dinput);
  let assemblyFormat = "$drows `,` $slots attr-dict `:` type($drows) `,` type($slots) `->` type($dinput)";
  let hasVerifier = 1;
}

def Rudnn_SwiGluExpertsBackwardOp : Rudnn_Op<"swiglu_experts_backward", [Pure]> {
  let summary = "The gradients of rudnn.swiglu_experts (plain or tensor cores; pre-activations recomputed)";
  let description = [{
    rows [N, H], offsets ui32 [E + 1], slots ui32 [T, top_k] (the dispatch's: the weight gradients sum
    each expert's rows in token order), gate, up [E, I, H], down [E, H, I], dexpert [N, H] (the rows'
    gradient of the experts' output) → dinput [N, H] (the weights' dtype), dgate, dup f32 [E, I, H],
    ddown f32 [E, H, I]. `strategy` "scalar", "tensor_core" (F16/BF16, H and I multiples of 8) or
    "auto" (tensor cores where the target allows them). kernel_config {tile}: an index into
    moe_config::backwardTiles() (MoEConfig.h: 0-2 scalar, 3-4 tensor-core tiles) of the strategy.
  }];
  let arguments = (ins AnyRankedTensor:$rows, AnyRankedTensor:$offsets, AnyRankedTensor:$slots,
                       AnyRankedTensor:$gate, AnyRankedTensor:$up,
                       AnyRankedTensor:$down, AnyRankedTensor:$dexpert, StrAttr:$strategy,
                       OptionalAttr<DictionaryAttr>:$kernel_config);
  let results = (outs AnyRankedTensor:$dinput, AnyRankedTensor:$dgate, AnyRankedTensor:$dup, AnyRankedTensor:$ddown);
  let assemblyFormat = [{
    $rows `,` $offsets `,` $slots `,` $gate `,` $up `,` $down `,` $dexpert attr-dict `:` type($rows) `,`
    type($offsets) `,` type($slots) `,` type($gate) `,` type($up) `,` type($down) `,` type($dexpert) `->` type($dinput) `,` type($dgate) `,` type($dup)
    `,` type($ddown)
  }];
  let hasVerifier = 1;
}

#endif // RUDNN_DIALECT_MOE_TRAINING_OPS_TD
