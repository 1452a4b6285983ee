//===- AttentionOps.td - attention ---------------------------*- tablegen -*-===//
// SPEC §5. The verifier calls rudnn::contracts::check_attention (core/contracts/attention), the same
// check the public API runs, and check_strategy_fits for a concrete strategy; then the result type
// and the kernel_config.
#ifndef RUDNN_DIALECT_ATTENTION_OPS_TD
#define RUDNN_DIALECT_ATTENTION_OPS_TD

include "rudnn/Dialect/Rudnn/IR/RudnnBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Rudnn_AttentionOp : Rudnn_Op<"attention", [Pure, AttrSizedOperandSegments]> {
  let summary = "Scaled dot-product attention with grouped-query heads, mask, bias and causal";
  let description = [{
    query [B, Hq, Tq, D], key [B, Hkv, Tk, D], value [B, Hkv, Tk, Dv] → [B, Hq, Tq, Dv]; scores =
    scale · q·k + attn_bias, keys excluded by the mask (u8, nonzero) or by causality (bottom-right
    aligned: query i sees key j iff j <= i + Tk - Tq) get no weight; a row with no key left is zeros.
    `strategy` is "flash_mma" (FlashBlackboxAccelerated), "flash_unit", "fallback" or "autotune";
    the kernel_config's `strategy` key records the strategy that runs (0 flash_mma, 1 flash_unit,
    2 fallback) with its tile.
    ```mlir
    %o = rudnn.attention %q, %k, %v mask(%m : tensor<1x1x?x?xui8>) {scale = 0.125 : f32, causal = true,
           strategy = "autotune"} : tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>
           -> tensor<?x32x?x128xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$query, AnyRankedTensor:$key, AnyRankedTensor:$value,
                       Optional<AnyRankedTensor>:$mask, Optional<AnyRankedTensor>:$attn_bias,
                       F32Attr:$scale, BoolAttr:$causal, StrAttr:$strategy,
                       OptionalAttr<DictionaryAttr>:$kernel_config);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` `(` $mask^ `:` type($mask) `)`)?
    (`bias` `(` $attn_bias^ `:` type($attn_bias) `)`)? attr-dict `:` type($query) `,` type($key) `,`
    type($value) `->` type($output)
  }];
  let hasVerifier = 1;
}

#endif // RUDNN_DIALECT_ATTENTION_OPS_TD
