// Gated DeltaNet on rudnn-run: a chunked prefill (chunk 64) over the prompt, then one decode step
// token by token from the prefill's final state (Qwen3-Next-style shapes: K = V = 128, bf16).
// Keys and queries are meant to be L2-normalized by the caller: U(−0.15, 0.15) over 128 entries has
// |k|² ≈ 1; log_decay ≤ 0 is a decay, beta in [0, 1].
//   rudnn-run examples/gated_delta.mlir --random-inputs --dynamic-dim 2 \
//     --random-range query=-0.15,0.15 --random-range key=-0.15,0.15 \
//     --random-range step_query=-0.15,0.15 --random-range step_key=-0.15,0.15 \
//     --random-range log_decay=-0.5,0 --random-range step_log_decay=-0.5,0 \
//     --random-range beta=0,1 --random-range step_beta=0,1
// pack-round-trip: 2|8|prefill_out decode_out state|--random-range query=-0.15,0.15 --random-range key=-0.15,0.15 --random-range step_query=-0.15,0.15 --random-range step_key=-0.15,0.15 --random-range log_decay=-0.5,0 --random-range step_log_decay=-0.5,0 --random-range beta=0,1 --random-range step_beta=0,1
func.func @main(%q: tensor<?x4x100x128xbf16> {rudnn.name = "query"}, %k: tensor<?x4x100x128xbf16> {rudnn.name = "key"},
                %v: tensor<?x4x100x128xbf16> {rudnn.name = "value"}, %b: tensor<?x4x100xbf16> {rudnn.name = "beta"},
                %g: tensor<?x4x100xbf16> {rudnn.name = "log_decay"},
                %q1: tensor<?x4x1x128xbf16> {rudnn.name = "step_query"}, %k1: tensor<?x4x1x128xbf16> {rudnn.name = "step_key"},
                %v1: tensor<?x4x1x128xbf16> {rudnn.name = "step_value"}, %b1: tensor<?x4x1xbf16> {rudnn.name = "step_beta"},
                %g1: tensor<?x4x1xbf16> {rudnn.name = "step_log_decay"})
    -> (tensor<?x4x100x128xbf16> {rudnn.name = "prefill_out"}, tensor<?x4x1x128xbf16> {rudnn.name = "decode_out"},
        tensor<?x4x128x128xf32> {rudnn.name = "state"}) {
  %o, %s = rudnn.gated_delta %q, %k, %v, %b, %g {query_scale = 0.0883883 : f32, chunk_size = 64 : i64}
      : tensor<?x4x100x128xbf16>, tensor<?x4x100x128xbf16>, tensor<?x4x100x128xbf16>, tensor<?x4x100xbf16>,
        tensor<?x4x100xbf16> -> tensor<?x4x100x128xbf16>, tensor<?x4x128x128xf32>
  %o1, %s1 = rudnn.gated_delta %q1, %k1, %v1, %b1, %g1, %s {query_scale = 0.0883883 : f32, chunk_size = 0 : i64}
      : tensor<?x4x1x128xbf16>, tensor<?x4x1x128xbf16>, tensor<?x4x1x128xbf16>, tensor<?x4x1xbf16>,
        tensor<?x4x1xbf16>, tensor<?x4x128x128xf32> -> tensor<?x4x1x128xbf16>, tensor<?x4x128x128xf32>
  return %o, %o1, %s1 : tensor<?x4x100x128xbf16>, tensor<?x4x1x128xbf16>, tensor<?x4x128x128xf32>
}
