// A serving step over a shared page pool (SPEC §8): 4 sequences of lengths 7, 20, 33 and 3 (after this
// step) keep their K/V in 16-token pages of one 12-page pool, each through its own page table
// (examples/paged_serving/*.npy: page_table [4, 3] = [[5], [2, 9], [0, 11, 7], [3]] padded with 0,
// lengths, sequence_ids 0..3, positions = length − 1). One decode token per sequence is appended to
// the caches, then grouped-query paged attention (8 query heads over 2 kv heads, D = 64, bf16) runs
// over them unsplit and split-KV (4 splits), and MLA (16 heads, latent R = 128, rope P = 32) over a
// latent cache of the same pool.
//   rudnn-run examples/paged_serving.mlir --random-inputs --dynamic-dim 4 \
//     --input page_table=examples/paged_serving/page_table.npy --input lengths=examples/paged_serving/lengths.npy \
//     --input sequence_ids=examples/paged_serving/sequence_ids.npy --input positions=examples/paged_serving/positions.npy
// pack-round-trip: 4|11|attention attention_split mla new_key_cache|--input page_table={examples}/paged_serving/page_table.npy --input lengths={examples}/paged_serving/lengths.npy --input sequence_ids={examples}/paged_serving/sequence_ids.npy --input positions={examples}/paged_serving/positions.npy
func.func @main(%q: tensor<?x8x64xbf16> {rudnn.name = "query"}, %k: tensor<?x2x64xbf16> {rudnn.name = "key"},
                %v: tensor<?x2x64xbf16> {rudnn.name = "value"},
                %kc: tensor<12x16x2x64xbf16> {rudnn.name = "key_cache"},
                %vc: tensor<12x16x2x64xbf16> {rudnn.name = "value_cache"},
                %table: tensor<4x3xi32> {rudnn.name = "page_table"}, %lengths: tensor<4xi32> {rudnn.name = "lengths"},
                %seq: tensor<?xi32> {rudnn.name = "sequence_ids"}, %pos: tensor<?xi32> {rudnn.name = "positions"},
                %mq: tensor<?x16x128xbf16> {rudnn.name = "mla_query"},
                %mqp: tensor<?x16x32xbf16> {rudnn.name = "mla_query_rope"},
                %latent: tensor<12x16x1x128xbf16> {rudnn.name = "latent_cache"},
                %rope: tensor<12x16x1x32xbf16> {rudnn.name = "rope_cache"})
    -> (tensor<?x8x64xbf16> {rudnn.name = "attention"}, tensor<?x8x64xbf16> {rudnn.name = "attention_split"},
        tensor<?x16x128xbf16> {rudnn.name = "mla"}, tensor<12x16x2x64xbf16> {rudnn.name = "new_key_cache"}) {
  %kc2, %vc2 = rudnn.paged_append %k, %v, %kc, %vc, %table, %lengths, %seq, %pos
      : tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<12x16x2x64xbf16>, tensor<12x16x2x64xbf16>, tensor<4x3xi32>,
        tensor<4xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<12x16x2x64xbf16>, tensor<12x16x2x64xbf16>
  %o = rudnn.paged_attention %q, %kc2, %vc2, %table, %lengths, %seq, %pos {scale = 0.125 : f32, causal = true, splits = 1}
      : tensor<?x8x64xbf16>, tensor<12x16x2x64xbf16>, tensor<12x16x2x64xbf16>, tensor<4x3xi32>, tensor<4xi32>,
        tensor<?xi32>, tensor<?xi32> -> tensor<?x8x64xbf16>
  %os = rudnn.paged_attention %q, %kc2, %vc2, %table, %lengths, %seq, %pos {scale = 0.125 : f32, causal = true, splits = 4}
      : tensor<?x8x64xbf16>, tensor<12x16x2x64xbf16>, tensor<12x16x2x64xbf16>, tensor<4x3xi32>, tensor<4xi32>,
        tensor<?xi32>, tensor<?xi32> -> tensor<?x8x64xbf16>
  %m = rudnn.paged_mla %mq, %mqp, %latent, %rope, %table, %lengths, %seq, %pos {scale = 0.0737 : f32, causal = true, splits = 1}
      : tensor<?x16x128xbf16>, tensor<?x16x32xbf16>, tensor<12x16x1x128xbf16>, tensor<12x16x1x32xbf16>, tensor<4x3xi32>,
        tensor<4xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x128xbf16>
  return %o, %os, %m, %kc2 : tensor<?x8x64xbf16>, tensor<?x8x64xbf16>, tensor<?x16x128xbf16>, tensor<12x16x2x64xbf16>
}
