// The paged attention ops parse, verify and print back (SPEC §8): rudnn.paged_attention (decode GQA,
// D ≠ Dv, split-KV, every float dtype, static and dynamic queries/pages/page size and schedule
// extents, with plain and tensor-core kernel_configs), rudnn.paged_mla and rudnn.paged_append (with
// and without {}); the backward ops, atomic and ordered.
// RUN: rudnn-opt %s | rudnn-opt | FileCheck %s

// Decode with GQA 32/8, D = 128, bf16: queries and the schedule dynamic, the caches static; the
// tensor-core tile.
// CHECK-LABEL: func.func @decode_gqa
// CHECK: %[[O:.*]] = rudnn.paged_attention %arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6 {causal = true, kernel_config = {block_keys = 64 : i64, block_rows = 64 : i64, max_value_dim = 128 : i64, row_lanes = 0 : i64, tensor_core = 1 : i64}, scale = 0.0883883461 : f32, splits = 1 : i64} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
// CHECK: return %[[O]] : tensor<?x32x128xbf16>
func.func @decode_gqa(%q: tensor<?x32x128xbf16>, %k: tensor<64x16x8x128xbf16>, %v: tensor<64x16x8x128xbf16>,
                      %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>, %pos: tensor<?xi32>)
    -> tensor<?x32x128xbf16> {
  %o = rudnn.paged_attention %q, %k, %v, %table, %lengths, %seq, %pos {scale = 0.0883883461 : f32, causal = true, splits = 1,
         kernel_config = {tensor_core = 1, block_rows = 64, block_keys = 64, row_lanes = 0, max_value_dim = 128}}
       : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return %o : tensor<?x32x128xbf16>
}

// Every extent static, f32, D = 64 ≠ Dv = 32, not causal, split 4 ways, with a plain tile.
// CHECK-LABEL: func.func @static_split
// CHECK: rudnn.paged_attention %arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6 {causal = false, kernel_config = {block_keys = 32 : i64, block_rows = 4 : i64, max_value_dim = 32 : i64, row_lanes = 32 : i64, tensor_core = 0 : i64}, scale = 1.250000e-01 : f32, splits = 4 : i64} : tensor<6x4x64xf32>, tensor<10x16x4x64xf32>, tensor<10x16x4x32xf32>, tensor<3x4xi32>, tensor<3xi32>, tensor<6xi32>, tensor<6xi32> -> tensor<6x4x32xf32>
func.func @static_split(%q: tensor<6x4x64xf32>, %k: tensor<10x16x4x64xf32>, %v: tensor<10x16x4x32xf32>,
                        %table: tensor<3x4xi32>, %lengths: tensor<3xi32>, %seq: tensor<6xi32>, %pos: tensor<6xi32>)
    -> tensor<6x4x32xf32> {
  %o = rudnn.paged_attention %q, %k, %v, %table, %lengths, %seq, %pos {scale = 0.125 : f32, causal = false, splits = 4,
         kernel_config = {tensor_core = 0, block_rows = 4, block_keys = 32, row_lanes = 32, max_value_dim = 32}}
       : tensor<6x4x64xf32>, tensor<10x16x4x64xf32>, tensor<10x16x4x32xf32>, tensor<3x4xi32>, tensor<3xi32>,
         tensor<6xi32>, tensor<6xi32> -> tensor<6x4x32xf32>
  return %o : tensor<6x4x32xf32>
}

// f16 with dynamic pages and page size (G = 1), 32 splits; a static output against dynamic queries.
// CHECK-LABEL: func.func @dynamic_pages
// CHECK: rudnn.paged_attention {{.*}} {causal = true, scale = 5.000000e-01 : f32, splits = 32 : i64} : tensor<?x2x16xf16>, tensor<?x?x2x16xf16>, tensor<?x?x2x16xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<5x2x16xf16>
func.func @dynamic_pages(%q: tensor<?x2x16xf16>, %k: tensor<?x?x2x16xf16>, %v: tensor<?x?x2x16xf16>,
                         %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>, %pos: tensor<?xi32>)
    -> tensor<5x2x16xf16> {
  %o = rudnn.paged_attention %q, %k, %v, %table, %lengths, %seq, %pos {scale = 0.5 : f32, causal = true, splits = 32}
       : tensor<?x2x16xf16>, tensor<?x?x2x16xf16>, tensor<?x?x2x16xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>,
         tensor<?xi32> -> tensor<5x2x16xf16>
  return %o : tensor<5x2x16xf16>
}

// MLA: R = 512, P = 64, H = 16 (the latent rows are the values), unsplit and split 2 ways.
// CHECK-LABEL: func.func @mla
// CHECK: %[[A:.*]] = rudnn.paged_mla %arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7 {causal = false, scale = 0.0721687824 : f32, splits = 1 : i64} : tensor<?x16x512xbf16>, tensor<?x16x64xbf16>, tensor<?x64x1x512xbf16>, tensor<?x64x1x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
// CHECK: %[[B:.*]] = rudnn.paged_mla {{.*}} {causal = true, scale = 0.0721687824 : f32, splits = 2 : i64} : tensor<?x16x512xbf16>, tensor<?x16x64xbf16>, tensor<?x64x1x512xbf16>, tensor<?x64x1x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
// CHECK: return %[[A]], %[[B]]
func.func @mla(%q: tensor<?x16x512xbf16>, %qp: tensor<?x16x64xbf16>, %latent: tensor<?x64x1x512xbf16>,
               %kp: tensor<?x64x1x64xbf16>, %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>,
               %pos: tensor<?xi32>) -> (tensor<?x16x512xbf16>, tensor<?x16x512xbf16>) {
  %a = rudnn.paged_mla %q, %qp, %latent, %kp, %table, %lengths, %seq, %pos {scale = 0.0721687824 : f32, causal = false, splits = 1}
       : tensor<?x16x512xbf16>, tensor<?x16x64xbf16>, tensor<?x64x1x512xbf16>, tensor<?x64x1x64xbf16>, tensor<?x?xi32>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  %b = rudnn.paged_mla %q, %qp, %latent, %kp, %table, %lengths, %seq, %pos {scale = 0.0721687824 : f32, causal = true, splits = 2}
       : tensor<?x16x512xbf16>, tensor<?x16x64xbf16>, tensor<?x64x1x512xbf16>, tensor<?x64x1x64xbf16>, tensor<?x?xi32>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  return %a, %b : tensor<?x16x512xbf16>, tensor<?x16x512xbf16>
}

// Static MLA, f32, with a kernel_config (the values are the keys: no value tile).
// CHECK-LABEL: func.func @mla_static
// CHECK: rudnn.paged_mla {{.*}} {causal = true, kernel_config = {block_keys = 32 : i64, block_rows = 16 : i64, max_value_dim = 64 : i64, row_lanes = 8 : i64, tensor_core = 0 : i64}, scale = 1.000000e+00 : f32, splits = 1 : i64} : tensor<3x16x64xf32>, tensor<3x16x8xf32>, tensor<4x8x1x64xf32>, tensor<4x8x1x8xf32>, tensor<2x2xi32>, tensor<2xi32>, tensor<3xi32>, tensor<3xi32> -> tensor<3x16x64xf32>
func.func @mla_static(%q: tensor<3x16x64xf32>, %qp: tensor<3x16x8xf32>, %latent: tensor<4x8x1x64xf32>,
                      %kp: tensor<4x8x1x8xf32>, %table: tensor<2x2xi32>, %lengths: tensor<2xi32>, %seq: tensor<3xi32>,
                      %pos: tensor<3xi32>) -> tensor<3x16x64xf32> {
  %o = rudnn.paged_mla %q, %qp, %latent, %kp, %table, %lengths, %seq, %pos {scale = 1.0 : f32, causal = true, splits = 1,
         kernel_config = {tensor_core = 0, block_rows = 16, block_keys = 32, row_lanes = 8, max_value_dim = 64}}
       : tensor<3x16x64xf32>, tensor<3x16x8xf32>, tensor<4x8x1x64xf32>, tensor<4x8x1x8xf32>, tensor<2x2xi32>,
         tensor<2xi32>, tensor<3xi32>, tensor<3xi32> -> tensor<3x16x64xf32>
  return %o : tensor<3x16x64xf32>
}

// Append: dynamic rows and caches (bf16, D = 128 = Dv), then static ones (f32, D = 64 ≠ Dv = 32)
// with the empty kernel_config.
// CHECK-LABEL: func.func @append
// CHECK: %[[K:[a-z_0-9]+]], %[[V:[a-z_0-9]+]] = rudnn.paged_append %arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7 : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>
// CHECK: return %[[K]], %[[V]]
func.func @append(%k: tensor<?x8x128xbf16>, %v: tensor<?x8x128xbf16>, %kc: tensor<?x?x8x128xbf16>,
                  %vc: tensor<?x?x8x128xbf16>, %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>,
                  %pos: tensor<?xi32>) -> (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>) {
  %nk, %nv = rudnn.paged_append %k, %v, %kc, %vc, %table, %lengths, %seq, %pos
             : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>,
               tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>
  return %nk, %nv : tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>
}

// CHECK-LABEL: func.func @append_static
// CHECK: rudnn.paged_append {{.*}} {kernel_config = {}} : tensor<4x2x64xf32>, tensor<4x2x32xf32>, tensor<6x16x2x64xf32>, tensor<6x16x2x32xf32>, tensor<2x3xi32>, tensor<2xi32>, tensor<4xi32>, tensor<4xi32> -> tensor<6x16x2x64xf32>, tensor<6x16x2x32xf32>
func.func @append_static(%k: tensor<4x2x64xf32>, %v: tensor<4x2x32xf32>, %kc: tensor<6x16x2x64xf32>,
                         %vc: tensor<6x16x2x32xf32>, %table: tensor<2x3xi32>, %lengths: tensor<2xi32>,
                         %seq: tensor<4xi32>, %pos: tensor<4xi32>) -> (tensor<6x16x2x64xf32>, tensor<6x16x2x32xf32>) {
  %nk, %nv = rudnn.paged_append %k, %v, %kc, %vc, %table, %lengths, %seq, %pos {kernel_config = {}}
             : tensor<4x2x64xf32>, tensor<4x2x32xf32>, tensor<6x16x2x64xf32>, tensor<6x16x2x32xf32>, tensor<2x3xi32>,
               tensor<2xi32>, tensor<4xi32>, tensor<4xi32> -> tensor<6x16x2x64xf32>, tensor<6x16x2x32xf32>
  return %nk, %nv : tensor<6x16x2x64xf32>, tensor<6x16x2x32xf32>
}

// The backward ops (SPEC §9): attention with GQA 8/2 and D ≠ Dv, a {warps} config; MLA at R = 512 / P = 64.
// CHECK-LABEL: func.func @backward
// CHECK: rudnn.paged_attention_backward %arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7 {causal = true, kernel_config = {warps = 8 : i64}, scale = 1.250000e-01 : f32} : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>, tensor<?x8x32xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>
// CHECK: rudnn.paged_mla_backward %arg8, %arg9, %arg10, %arg11, %arg12, %arg4, %arg5, %arg6, %arg7 {causal = false, scale = 0.0416666679 : f32} : tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>, tensor<?x16x512xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>
func.func @backward(%q: tensor<?x8x64xbf16>, %k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x32xbf16>, %go: tensor<?x8x32xbf16>,
                    %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>,
                    %mq: tensor<?x16x512xf16>, %mqp: tensor<?x16x64xf16>, %mc: tensor<32x64x1x512xf16>, %mkp: tensor<32x64x1x64xf16>,
                    %mgo: tensor<?x16x512xf16>) {
  %dq, %dk, %dv = rudnn.paged_attention_backward %q, %k, %v, %go, %t, %l, %s, %p {scale = 0.125 : f32, causal = true, kernel_config = {warps = 8}}
      : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>, tensor<?x8x32xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
      -> tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>
  %a, %b, %c, %d = rudnn.paged_mla_backward %mq, %mqp, %mc, %mkp, %mgo, %t, %l, %s, %p {scale = 0.0416666679 : f32, causal = false}
      : tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>, tensor<?x16x512xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
      -> tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>
  return
}

// The ordered form (SPEC §9, ordered(history_index, page_order), both i32 vectors): attention plain
// and with both switches (printed in the attr-dict, sorted); MLA with a static index and cache_rows,
// then compact_history alone.
// CHECK-LABEL: func.func @backward_ordered
// CHECK: %[[DQ:[a-z_0-9]+]], %[[DK:[a-z_0-9]+]], %[[DV:[a-z_0-9]+]] = rudnn.paged_attention_backward %arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7 ordered(%arg8, %arg9 : tensor<?xi32>, tensor<?xi32>) {causal = true, scale = 1.250000e-01 : f32} : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>, tensor<?x8x32xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>
// CHECK: rudnn.paged_attention_backward %arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7 ordered(%arg8, %arg9 : tensor<?xi32>, tensor<?xi32>) {cache_rows, causal = false, compact_history, kernel_config = {warps = 2 : i64}, scale = 1.250000e-01 : f32} : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>, tensor<?x8x32xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>
// CHECK: rudnn.paged_mla_backward %arg10, %arg11, %arg12, %arg13, %arg14, %arg4, %arg5, %arg6, %arg7 ordered(%arg15, %arg16 : tensor<96xi32>, tensor<32xi32>) {cache_rows, causal = true, scale = 0.0416666679 : f32} : tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>, tensor<?x16x512xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>
// CHECK: rudnn.paged_mla_backward {{.*}} ordered(%arg15, %arg16 : tensor<96xi32>, tensor<32xi32>) {causal = false, compact_history, kernel_config = {warps = 8 : i64}, scale = 0.0416666679 : f32} : tensor<?x16x512xf16>
// CHECK: return %[[DQ]], %[[DK]], %[[DV]]
func.func @backward_ordered(%q: tensor<?x8x64xbf16>, %k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x32xbf16>, %go: tensor<?x8x32xbf16>,
                            %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>,
                            %index: tensor<?xi32>, %order: tensor<?xi32>,
                            %mq: tensor<?x16x512xf16>, %mqp: tensor<?x16x64xf16>, %mc: tensor<32x64x1x512xf16>, %mkp: tensor<32x64x1x64xf16>,
                            %mgo: tensor<?x16x512xf16>, %mindex: tensor<96xi32>, %morder: tensor<32xi32>)
    -> (tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>) {
  %dq, %dk, %dv = rudnn.paged_attention_backward %q, %k, %v, %go, %t, %l, %s, %p ordered(%index, %order : tensor<?xi32>, tensor<?xi32>)
      {scale = 0.125 : f32, causal = true}
      : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>, tensor<?x8x32xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
      -> tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>
  %dq2, %dk2, %dv2 = rudnn.paged_attention_backward %q, %k, %v, %go, %t, %l, %s, %p ordered(%index, %order : tensor<?xi32>, tensor<?xi32>)
      {scale = 0.125 : f32, causal = false, cache_rows, compact_history, kernel_config = {warps = 2}}
      : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>, tensor<?x8x32xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
      -> tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>
  %a, %b, %c, %d = rudnn.paged_mla_backward %mq, %mqp, %mc, %mkp, %mgo, %t, %l, %s, %p ordered(%mindex, %morder : tensor<96xi32>, tensor<32xi32>)
      {scale = 0.0416666679 : f32, causal = true, cache_rows}
      : tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>, tensor<?x16x512xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
      -> tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>
  %a2, %b2, %c2, %d2 = rudnn.paged_mla_backward %mq, %mqp, %mc, %mkp, %mgo, %t, %l, %s, %p ordered(%mindex, %morder : tensor<96xi32>, tensor<32xi32>)
      {scale = 0.0416666679 : f32, causal = false, compact_history, kernel_config = {warps = 8}}
      : tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>, tensor<?x16x512xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
      -> tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>
  return %dq, %dk, %dv : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>
}
