// A Llama-style attention layer on rudnn-run: RMSNorm of the hidden states' query/key/value stand-ins,
// then grouped-query causal attention (32 query heads over 8 kv heads, head dim 128, bf16) with the
// Autotune strategy (tensor cores where they fit); projections and RoPE stay with the caller.
//   rudnn-run examples/attention.mlir --random-inputs --dynamic-dim 1
// pack-round-trip: 1|7|attn_out|
func.func @main(%q: tensor<?x32x64x128xbf16> {rudnn.name = "query"}, %k: tensor<?x8x64x128xbf16> {rudnn.name = "key"},
                %v: tensor<?x8x64x128xbf16> {rudnn.name = "value"}, %g: tensor<128xf32> {rudnn.name = "q_norm"})
    -> (tensor<?x32x64x128xbf16> {rudnn.name = "attn_out"}) {
  %qn = rudnn.rms_norm %q, %g {epsilon = 1.0e-06 : f32} : tensor<?x32x64x128xbf16>, tensor<128xf32>
  %o = rudnn.attention %qn, %k, %v {scale = 0.0883883 : f32, causal = true, strategy = "autotune"}
      : tensor<?x32x64x128xbf16>, tensor<?x8x64x128xbf16>, tensor<?x8x64x128xbf16> -> tensor<?x32x64x128xbf16>
  return %o : tensor<?x32x64x128xbf16>
}
