// A training step's attention over a paged KV cache (SPEC §9): the schedule of
// examples/paged_serving.mlir (4 sequences of lengths 7, 20, 33 and 3 in 16-token pages of one
// 12-page pool, one query row per sequence at its last position), grouped-query paged attention
// (8 query heads over 2 kv heads, D = 64, bf16) and MLA (16 heads, latent R = 128, rope P = 32)
// forward, then their gradients for a random output gradient: dq, and dk / dv / dlatent / dkp in the
// caches' paged shapes (only the pages the four sequences reach are non-zero).
//   rudnn-run examples/paged_training.mlir --random-inputs --dynamic-dim 4 \
//     --input page_table=examples/paged_serving/page_table.npy --input lengths=examples/paged_serving/lengths.npy \
//     --input sequence_ids=examples/paged_serving/sequence_ids.npy --input positions=examples/paged_serving/positions.npy
// The round trip compares the outputs that are bitwise deterministic: the history gradients (dk, dv,
// dlatent, dkp) sum with FP32 atomics, whose order follows the emulator's block threads (SPEC §9).
// pack-round-trip: 4|12|attention dq|--input page_table={examples}/paged_serving/page_table.npy --input lengths={examples}/paged_serving/lengths.npy --input sequence_ids={examples}/paged_serving/sequence_ids.npy --input positions={examples}/paged_serving/positions.npy
func.func @main(%q: tensor<?x8x64xbf16> {rudnn.name = "query"},
                %kc: tensor<12x16x2x64xbf16> {rudnn.name = "key_cache"},
                %vc: tensor<12x16x2x64xbf16> {rudnn.name = "value_cache"},
                %go: tensor<?x8x64xbf16> {rudnn.name = "grad_out"},
                %table: tensor<4x3xi32> {rudnn.name = "page_table"}, %lengths: tensor<4xi32> {rudnn.name = "lengths"},
                %seq: tensor<?xi32> {rudnn.name = "sequence_ids"}, %pos: tensor<?xi32> {rudnn.name = "positions"},
                %mq: tensor<?x16x128xbf16> {rudnn.name = "mla_query"},
                %mqp: tensor<?x16x32xbf16> {rudnn.name = "mla_query_rope"},
                %latent: tensor<12x16x1x128xbf16> {rudnn.name = "latent_cache"},
                %rope: tensor<12x16x1x32xbf16> {rudnn.name = "rope_cache"},
                %mgo: tensor<?x16x128xbf16> {rudnn.name = "mla_grad_out"})
    -> (tensor<?x8x64xbf16> {rudnn.name = "attention"}, tensor<?x8x64xbf16> {rudnn.name = "dq"},
        tensor<12x16x2x64xbf16> {rudnn.name = "dk"}, tensor<12x16x2x64xbf16> {rudnn.name = "dv"},
        tensor<12x16x1x128xbf16> {rudnn.name = "dlatent"}, tensor<12x16x1x32xbf16> {rudnn.name = "dkp"}) {
  %o = rudnn.paged_attention %q, %kc, %vc, %table, %lengths, %seq, %pos {scale = 0.125 : f32, causal = true, splits = 1}
      : tensor<?x8x64xbf16>, tensor<12x16x2x64xbf16>, tensor<12x16x2x64xbf16>, tensor<4x3xi32>, tensor<4xi32>,
        tensor<?xi32>, tensor<?xi32> -> tensor<?x8x64xbf16>
  %dq, %dk, %dv = rudnn.paged_attention_backward %q, %kc, %vc, %go, %table, %lengths, %seq, %pos {scale = 0.125 : f32, causal = true}
      : tensor<?x8x64xbf16>, tensor<12x16x2x64xbf16>, tensor<12x16x2x64xbf16>, tensor<?x8x64xbf16>, tensor<4x3xi32>,
        tensor<4xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8x64xbf16>, tensor<12x16x2x64xbf16>, tensor<12x16x2x64xbf16>
  %mdq, %mdqp, %dlatent, %dkp = rudnn.paged_mla_backward %mq, %mqp, %latent, %rope, %mgo, %table, %lengths, %seq, %pos {scale = 0.0737 : f32, causal = true}
      : tensor<?x16x128xbf16>, tensor<?x16x32xbf16>, tensor<12x16x1x128xbf16>, tensor<12x16x1x32xbf16>, tensor<?x16x128xbf16>,
        tensor<4x3xi32>, tensor<4xi32>, tensor<?xi32>, tensor<?xi32>
        -> tensor<?x16x128xbf16>, tensor<?x16x32xbf16>, tensor<12x16x1x128xbf16>, tensor<12x16x1x32xbf16>
  return %o, %dq, %dk, %dv, %dlatent, %dkp : tensor<?x8x64xbf16>, tensor<?x8x64xbf16>, tensor<12x16x2x64xbf16>,
      tensor<12x16x2x64xbf16>, tensor<12x16x1x128xbf16>, tensor<12x16x1x32xbf16>
}
