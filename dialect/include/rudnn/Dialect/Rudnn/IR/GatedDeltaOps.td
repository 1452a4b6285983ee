//===- GatedDeltaOps.td - gated delta rule ------------------*- tablegen -*-===//
// SPEC §7. The verifier calls rudnn::contracts::check_gated_delta (core/contracts/gated_delta), the
// same check the public API runs, then checks the result types and the kernel_config.
#ifndef RUDNN_DIALECT_GATED_DELTA_OPS_TD
#define RUDNN_DIALECT_GATED_DELTA_OPS_TD

include "rudnn/Dialect/Rudnn/IR/RudnnBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Rudnn_GatedDeltaOp : Rudnn_Op<"gated_delta", [Pure]> {
  let summary = "Gated delta rule: token-by-token recurrence (chunk_size = 0) or chunked prefill";
  let description = [{
    Per step t (S is K×V, f32): S ← S·exp(g_t); u_t = β_t (v_t − Sᵀk_t); S ← S + k_t u_tᵀ;
    o_t = Sᵀ(query_scale · q_t). `chunk_size` = 0 runs the recurrence, C > 0 the chunked (WY) form
    with chunks of C steps. Results: output [B, H, T, V] (query dtype) and final_state f32 [B, H, K, V];
    an absent initial_state is zeros.
    ```mlir
    %o, %s = rudnn.gated_delta %q, %k, %v, %beta, %g, %s0 {query_scale = 0.0883883 : f32, chunk_size = 64 : i64}
        : tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>, tensor<?x?x?xbf16>,
          tensor<?x?x?xbf16>, tensor<?x?x128x128xf32> -> tensor<?x?x?x128xbf16>, tensor<?x?x128x128xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$query, AnyRankedTensor:$key, AnyRankedTensor:$value,
                       AnyRankedTensor:$beta, AnyRankedTensor:$log_decay,
                       Optional<AnyRankedTensor>:$initial_state, F32Attr:$query_scale, I64Attr:$chunk_size,
                       OptionalAttr<DictionaryAttr>:$kernel_config);
  let results = (outs AnyRankedTensor:$output, AnyRankedTensor:$final_state);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $beta `,` $log_decay (`,` $initial_state^)? attr-dict `:` type($query) `,`
    type($key) `,` type($value) `,` type($beta) `,` type($log_decay) (`,` type($initial_state)^)? `->`
    type($output) `,` type($final_state)
  }];
  let hasVerifier = 1;
}

#endif // RUDNN_DIALECT_GATED_DELTA_OPS_TD
