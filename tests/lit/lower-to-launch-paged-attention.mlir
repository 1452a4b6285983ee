// rudnn-lower-to-launch on the paged ops (PagedAttentionToLaunch.cpp). Attention and MLA: one
// launch with head counts and dims as constants and queries, page size and table stride read from
// the operands, one work item per (query row, kv head, split): grid queries × Hkv · splits. Plain
// tiles: paged_attention_unit (rudnn::paged::UnitPolicy<block_rows, block_keys, row_lanes,
// max_value_dim, value_from_key>), block_rows · row_lanes threads, shared = 4 · ((BM + BN) ·
// stride(D + P) + BM · (BN + 4) + BN · Dv) (no value tile for MLA), stride(d) = d + 4 here.
// Tensor-core tiles: paged_attention_mma (rudnn::paged::MmaPolicy<D, block_rows, block_keys>, no
// rope operands), 128 threads, shared = (BM + 4 · BN) · (D + 8) · 2. Unsplit the kernel writes the
// output (slot after the operands); split it writes the FP32 workspace of splits · Q · Hq · (Dv + 1)
// floats (result_elements) and paged_merge (128 threads, one block per row and head) reads it. The
// append: paged_copy of each cache into its result (a no-op in place), then paged_append, one block
// per row and kv head.
// RUN: rudnn-opt %s --rudnn-lower-to-launch | FileCheck %s

// Decode GQA 32/8, D = 128, bf16, unsplit, plain: group 4 fills the 4 rows, grid Q × 8; 128
// threads; shared 4 · (36 · 132 + 4 · 36 + 32 · 128) = 35968.
// CHECK-LABEL: func.func @unsplit
// CHECK: %[[O:.*]] = rudnn.launch @rudnn_paged_attention_bf16_4x32_l32_v128(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6)
// CHECK-SAME: header "rudnn/paged/unit.cuh" function "rudnn::paged::paged_attention_unit"
// CHECK-SAME: args ["rudnn::bf16", "rudnn::paged::UnitPolicy<4, 32, 32, 128, false>"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0)>, #rudnn.size<8>, #rudnn.size<1>] block [128, 1, 1] shared 35968
// CHECK-SAME: params [#rudnn.param<"q" : "const rudnn::bf16*" = buffer(0)>, #rudnn.param<"q_rope" : "const rudnn::bf16*" = null>, #rudnn.param<"k" : "const rudnn::bf16*" = buffer(1)>, #rudnn.param<"k_rope" : "const rudnn::bf16*" = null>, #rudnn.param<"v" : "const rudnn::bf16*" = buffer(2)>
// CHECK-SAME: #rudnn.param<"page_table" : "const rudnn::i32*" = buffer(3)>, #rudnn.param<"lengths" : "const rudnn::i32*" = buffer(4)>, #rudnn.param<"sequence_ids" : "const rudnn::i32*" = buffer(5)>, #rudnn.param<"positions" : "const rudnn::i32*" = buffer(6)>
// CHECK-SAME: #rudnn.param<"out" : "rudnn::bf16*" = buffer(7)>, #rudnn.param<"partial" : "float*" = null>
// CHECK-SAME: #rudnn.param<"queries" : "long long" = size(dim(0, 0))>, #rudnn.param<"q_heads" : "long long" = size(32)>, #rudnn.param<"kv_heads" : "long long" = size(8)>, #rudnn.param<"head_dim" : "long long" = size(128)>, #rudnn.param<"rope_dim" : "long long" = size(0)>, #rudnn.param<"value_dim" : "long long" = size(128)>
// CHECK-SAME: #rudnn.param<"page_size" : "long long" = size(dim(1, 1))>, #rudnn.param<"table_stride" : "long long" = size(dim(3, 1))>, #rudnn.param<"splits" : "long long" = size(1)>, #rudnn.param<"causal" : "long long" = size(1)>, #rudnn.param<"scale" : "float" = f32(0.0883883461)>]
// CHECK-SAME: {origin = "rudnn.paged_attention", rudnn.min_blocks = 1 : i64}
// CHECK-NOT: result_elements
// CHECK-SAME: -> tensor<?x32x128xbf16>
// CHECK-NOT: rudnn.launch
// CHECK: return %[[O]]
func.func @unsplit(%q: tensor<?x32x128xbf16>, %k: tensor<?x?x8x128xbf16>, %v: tensor<?x?x8x128xbf16>,
                   %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>, %pos: tensor<?xi32>)
    -> tensor<?x32x128xbf16> {
  %o = rudnn.paged_attention %q, %k, %v, %table, %lengths, %seq, %pos {scale = 0.0883883461 : f32, causal = true, splits = 1,
         kernel_config = {tensor_core = 0, block_rows = 4, block_keys = 32, row_lanes = 32, max_value_dim = 128}}
       : tensor<?x32x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return %o : tensor<?x32x128xbf16>
}

// G = 1 prefill (16/16), f32: still one work item per query row (a row that starts a query tile
// serves it), grid Q × 16.
// CHECK-LABEL: func.func @group_1
// CHECK: rudnn.launch @rudnn_paged_attention_f32_4x32_l32_v128(
// CHECK-SAME: args ["float", "rudnn::paged::UnitPolicy<4, 32, 32, 128, false>"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0)>, #rudnn.size<16>, #rudnn.size<1>] block [128, 1, 1] shared 35968
// CHECK-SAME: #rudnn.param<"causal" : "long long" = size(1)>
func.func @group_1(%q: tensor<?x16x128xf32>, %k: tensor<?x?x16x128xf32>, %v: tensor<?x?x16x128xf32>,
                   %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>, %pos: tensor<?xi32>)
    -> tensor<?x16x128xf32> {
  %o = rudnn.paged_attention %q, %k, %v, %table, %lengths, %seq, %pos {scale = 0.0883883461 : f32, causal = true, splits = 1,
         kernel_config = {tensor_core = 0, block_rows = 4, block_keys = 32, row_lanes = 32, max_value_dim = 128}}
       : tensor<?x16x128xf32>, tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32> -> tensor<?x16x128xf32>
  return %o : tensor<?x16x128xf32>
}

// Tensor cores, GQA 32/8, D = 128, bf16: unsplit with the 64x64 tile (shared (64 + 256) · 136 · 2 =
// 87040), and split 8 ways with the 128x32 tile (shared (128 + 128) · 136 · 2 = 69632, grid Q × 64,
// 8 · Q · 32 · 129 workspace floats) then the merge.
// CHECK-LABEL: func.func @tensor_cores
// CHECK: %[[O:.*]] = rudnn.launch @rudnn_paged_attention_mma_bf16_d128_64x64(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6)
// CHECK-SAME: header "rudnn/paged/mma.cuh" function "rudnn::paged::paged_attention_mma"
// CHECK-SAME: args ["rudnn::bf16", "rudnn::paged::MmaPolicy<128, 64, 64>"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0)>, #rudnn.size<8>, #rudnn.size<1>] block [128, 1, 1] shared 87040
// CHECK-SAME: params [#rudnn.param<"q" : "const rudnn::bf16*" = buffer(0)>, #rudnn.param<"k" : "const rudnn::bf16*" = buffer(1)>, #rudnn.param<"v" : "const rudnn::bf16*" = buffer(2)>, #rudnn.param<"page_table" : "const rudnn::i32*" = buffer(3)>, #rudnn.param<"lengths" : "const rudnn::i32*" = buffer(4)>, #rudnn.param<"sequence_ids" : "const rudnn::i32*" = buffer(5)>, #rudnn.param<"positions" : "const rudnn::i32*" = buffer(6)>, #rudnn.param<"out" : "rudnn::bf16*" = buffer(7)>, #rudnn.param<"partial" : "float*" = null>
// CHECK-SAME: #rudnn.param<"queries" : "long long" = size(dim(0, 0))>, #rudnn.param<"q_heads" : "long long" = size(32)>, #rudnn.param<"kv_heads" : "long long" = size(8)>, #rudnn.param<"head_dim" : "long long" = size(128)>, #rudnn.param<"value_dim" : "long long" = size(128)>, #rudnn.param<"page_size" : "long long" = size(dim(1, 1))>, #rudnn.param<"table_stride" : "long long" = size(dim(3, 1))>, #rudnn.param<"splits" : "long long" = size(1)>, #rudnn.param<"causal" : "long long" = size(1)>, #rudnn.param<"scale" : "float" = f32(0.0883883461)>]
// CHECK-SAME: -> tensor<?x32x128xbf16>
// CHECK: %[[P:.*]] = rudnn.launch @rudnn_paged_attention_mma_bf16_d128_128x32_split(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6)
// CHECK-SAME: args ["rudnn::bf16", "rudnn::paged::MmaPolicy<128, 128, 32>"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0)>, #rudnn.size<64>, #rudnn.size<1>] block [128, 1, 1] shared 69632
// CHECK-SAME: #rudnn.param<"out" : "rudnn::bf16*" = null>, #rudnn.param<"partial" : "float*" = buffer(7)>
// CHECK-SAME: #rudnn.param<"splits" : "long long" = size(8)>, #rudnn.param<"causal" : "long long" = size(0)>
// CHECK-SAME: result_elements = [#rudnn.size<8 * dim(0, 0) * 4128>]
// CHECK: %[[S:.*]] = rudnn.launch @rudnn_paged_merge_bf16(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %[[P]])
// CHECK-SAME: grid [#rudnn.size<dim(0, 0) * 32>, #rudnn.size<1>, #rudnn.size<1>] block [128, 1, 1] shared 0
// CHECK-SAME: #rudnn.param<"partial" : "const float*" = buffer(7)>, #rudnn.param<"out" : "rudnn::bf16*" = buffer(8)>
// CHECK-SAME: #rudnn.param<"heads" : "long long" = size(32)>, #rudnn.param<"value_dim" : "long long" = size(128)>, #rudnn.param<"splits" : "long long" = size(8)>
// CHECK: return %[[O]], %[[S]]
func.func @tensor_cores(%q: tensor<?x32x128xbf16>, %k: tensor<?x?x8x128xbf16>, %v: tensor<?x?x8x128xbf16>,
                        %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>, %pos: tensor<?xi32>)
    -> (tensor<?x32x128xbf16>, tensor<?x32x128xbf16>) {
  %o = rudnn.paged_attention %q, %k, %v, %table, %lengths, %seq, %pos {scale = 0.0883883461 : f32, causal = true, splits = 1,
         kernel_config = {tensor_core = 1, block_rows = 64, block_keys = 64, row_lanes = 0, max_value_dim = 128}}
       : tensor<?x32x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  %s = rudnn.paged_attention %q, %k, %v, %table, %lengths, %seq, %pos {scale = 0.0883883461 : f32, causal = false, splits = 8,
         kernel_config = {tensor_core = 1, block_rows = 128, block_keys = 32, row_lanes = 0, max_value_dim = 128}}
       : tensor<?x32x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return %o, %s : tensor<?x32x128xbf16>, tensor<?x32x128xbf16>
}

// Hopper's warpgroup MMA (wgmma = 1): paged_attention_wgmma with WgmmaPolicy<D, block_keys>, the
// mma.sync kernel's parameters, 128 threads (one warpgroup), shared = (64 · D + 4 · BN · D) · 2 +
// 1024 (Q and two stages of K and V in swizzled tiles, plus the 1024-byte alignment slack): GQA 32/8
// at D = 128 unsplit (82944), and D = 256 split 4 ways with 32-key tiles (99328) then the merge.
// CHECK-LABEL: func.func @wgmma
// CHECK: rudnn.launch @rudnn_paged_attention_wgmma_bf16_d128_64x64(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6)
// CHECK-SAME: header "rudnn/paged/wgmma.cuh" function "rudnn::paged::paged_attention_wgmma"
// CHECK-SAME: args ["rudnn::bf16", "rudnn::paged::WgmmaPolicy<128, 64>"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0)>, #rudnn.size<8>, #rudnn.size<1>] block [128, 1, 1] shared 82944
// CHECK-SAME: params [#rudnn.param<"q" : "const rudnn::bf16*" = buffer(0)>, #rudnn.param<"k" : "const rudnn::bf16*" = buffer(1)>, #rudnn.param<"v" : "const rudnn::bf16*" = buffer(2)>, #rudnn.param<"page_table" : "const rudnn::i32*" = buffer(3)>
// CHECK-SAME: #rudnn.param<"head_dim" : "long long" = size(128)>, #rudnn.param<"value_dim" : "long long" = size(128)>
// CHECK: %[[P:.*]] = rudnn.launch @rudnn_paged_attention_wgmma_f16_d256_64x32_split(
// CHECK-SAME: header "rudnn/paged/wgmma.cuh" function "rudnn::paged::paged_attention_wgmma"
// CHECK-SAME: args ["rudnn::f16", "rudnn::paged::WgmmaPolicy<256, 32>"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0)>, #rudnn.size<8>, #rudnn.size<1>] block [128, 1, 1] shared 99328
// CHECK-SAME: #rudnn.param<"out" : "rudnn::f16*" = null>, #rudnn.param<"partial" : "float*" = buffer(7)>
// CHECK: rudnn.launch @rudnn_paged_merge_f16({{.*}}, %[[P]])
func.func @wgmma(%q: tensor<?x32x128xbf16>, %k: tensor<?x?x8x128xbf16>, %v: tensor<?x?x8x128xbf16>,
                 %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>, %pos: tensor<?xi32>,
                 %q256: tensor<?x8x256xf16>, %k256: tensor<?x?x2x256xf16>)
    -> (tensor<?x32x128xbf16>, tensor<?x8x256xf16>) {
  %o = rudnn.paged_attention %q, %k, %v, %table, %lengths, %seq, %pos {scale = 0.0883883461 : f32, causal = true, splits = 1,
         kernel_config = {tensor_core = 1, block_rows = 64, block_keys = 64, row_lanes = 0, max_value_dim = 128, wgmma = 1}}
       : tensor<?x32x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  %s = rudnn.paged_attention %q256, %k256, %k256, %table, %lengths, %seq, %pos {scale = 0.0625 : f32, causal = true, splits = 4,
         kernel_config = {tensor_core = 1, block_rows = 64, block_keys = 32, row_lanes = 0, max_value_dim = 256, wgmma = 1}}
       : tensor<?x8x256xf16>, tensor<?x?x2x256xf16>, tensor<?x?x2x256xf16>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32> -> tensor<?x8x256xf16>
  return %o, %s : tensor<?x32x128xbf16>, tensor<?x8x256xf16>
}

// Split 4 ways, GQA 64/8, D = 128 ≠ Dv = 64, f16, not causal: the unit writes 4 · Q · 64 · 65 floats
// (grid Q × 8 · 4, shared 4 · (40 · 132 + 8 · 36 + 32 · 64) = 30464), the merge reads them (slot 7)
// and writes the output (slot 8) over Q · 64 blocks.
// CHECK-LABEL: func.func @split
// CHECK: %[[P:.*]] = rudnn.launch @rudnn_paged_attention_f16_8x32_l16_v64_split(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6)
// CHECK-SAME: args ["rudnn::f16", "rudnn::paged::UnitPolicy<8, 32, 16, 64, false>"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0)>, #rudnn.size<32>, #rudnn.size<1>] block [128, 1, 1] shared 30464
// CHECK-SAME: #rudnn.param<"out" : "rudnn::f16*" = null>, #rudnn.param<"partial" : "float*" = buffer(7)>
// CHECK-SAME: #rudnn.param<"q_heads" : "long long" = size(64)>, #rudnn.param<"kv_heads" : "long long" = size(8)>, #rudnn.param<"head_dim" : "long long" = size(128)>, #rudnn.param<"rope_dim" : "long long" = size(0)>, #rudnn.param<"value_dim" : "long long" = size(64)>
// CHECK-SAME: #rudnn.param<"splits" : "long long" = size(4)>, #rudnn.param<"causal" : "long long" = size(0)>, #rudnn.param<"scale" : "float" = f32(1.250000e-01)>]
// CHECK-SAME: result_elements = [#rudnn.size<4 * dim(0, 0) * 4160>]
// CHECK-SAME: -> tensor<?xf32>
// CHECK: %[[O:.*]] = rudnn.launch @rudnn_paged_merge_f16(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %[[P]])
// CHECK-SAME: header "rudnn/paged/merge.cuh" function "rudnn::paged::paged_merge" args ["rudnn::f16", "128"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0) * 64>, #rudnn.size<1>, #rudnn.size<1>] block [128, 1, 1] shared 0
// CHECK-SAME: params [#rudnn.param<"partial" : "const float*" = buffer(7)>, #rudnn.param<"out" : "rudnn::f16*" = buffer(8)>, #rudnn.param<"queries" : "long long" = size(dim(0, 0))>, #rudnn.param<"heads" : "long long" = size(64)>, #rudnn.param<"value_dim" : "long long" = size(64)>, #rudnn.param<"splits" : "long long" = size(4)>]
// CHECK-SAME: -> tensor<?x64x64xf16>
// CHECK-NOT: rudnn.launch
// CHECK: return %[[O]]
func.func @split(%q: tensor<?x64x128xf16>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x64xf16>,
                 %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>, %pos: tensor<?xi32>)
    -> tensor<?x64x64xf16> {
  %o = rudnn.paged_attention %q, %k, %v, %table, %lengths, %seq, %pos {scale = 0.125 : f32, causal = false, splits = 4,
         kernel_config = {tensor_core = 0, block_rows = 8, block_keys = 32, row_lanes = 16, max_value_dim = 64}}
       : tensor<?x64x128xf16>, tensor<?x16x8x128xf16>, tensor<?x16x8x64xf16>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32> -> tensor<?x64x64xf16>
  return %o : tensor<?x64x64xf16>
}

// MLA R = 512, P = 64, H = 16, split 2 ways: the rope parts in q_rope/k_rope, no value operand;
// 256 threads, shared 4 · (48 · 580 + 16 · 36) = 113664; 2 · Q · 16 · 513 workspace floats.
// CHECK-LABEL: func.func @mla_split
// CHECK: %[[P:.*]] = rudnn.launch @rudnn_paged_mla_bf16_16x32_l16_v512_split(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7)
// CHECK-SAME: args ["rudnn::bf16", "rudnn::paged::UnitPolicy<16, 32, 16, 512, true>"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0)>, #rudnn.size<2>, #rudnn.size<1>] block [256, 1, 1] shared 113664
// CHECK-SAME: params [#rudnn.param<"q" : "const rudnn::bf16*" = buffer(0)>, #rudnn.param<"q_rope" : "const rudnn::bf16*" = buffer(1)>, #rudnn.param<"k" : "const rudnn::bf16*" = buffer(2)>, #rudnn.param<"k_rope" : "const rudnn::bf16*" = buffer(3)>, #rudnn.param<"v" : "const rudnn::bf16*" = null>
// CHECK-SAME: #rudnn.param<"page_table" : "const rudnn::i32*" = buffer(4)>, #rudnn.param<"lengths" : "const rudnn::i32*" = buffer(5)>, #rudnn.param<"sequence_ids" : "const rudnn::i32*" = buffer(6)>, #rudnn.param<"positions" : "const rudnn::i32*" = buffer(7)>
// CHECK-SAME: #rudnn.param<"out" : "rudnn::bf16*" = null>, #rudnn.param<"partial" : "float*" = buffer(8)>
// CHECK-SAME: #rudnn.param<"q_heads" : "long long" = size(16)>, #rudnn.param<"kv_heads" : "long long" = size(1)>, #rudnn.param<"head_dim" : "long long" = size(512)>, #rudnn.param<"rope_dim" : "long long" = size(64)>, #rudnn.param<"value_dim" : "long long" = size(512)>
// CHECK-SAME: #rudnn.param<"page_size" : "long long" = size(dim(2, 1))>, #rudnn.param<"table_stride" : "long long" = size(dim(4, 1))>, #rudnn.param<"splits" : "long long" = size(2)>
// CHECK-SAME: result_elements = [#rudnn.size<2 * dim(0, 0) * 8208>]
// CHECK: %[[O:.*]] = rudnn.launch @rudnn_paged_merge_bf16(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7, %[[P]])
// CHECK-SAME: grid [#rudnn.size<dim(0, 0) * 16>, #rudnn.size<1>, #rudnn.size<1>] block [128, 1, 1] shared 0
// CHECK-SAME: #rudnn.param<"partial" : "const float*" = buffer(8)>, #rudnn.param<"out" : "rudnn::bf16*" = buffer(9)>
// CHECK-SAME: #rudnn.param<"value_dim" : "long long" = size(512)>, #rudnn.param<"splits" : "long long" = size(2)>
// CHECK-SAME: -> tensor<?x16x512xbf16>
// CHECK: return %[[O]]
func.func @mla_split(%q: tensor<?x16x512xbf16>, %qp: tensor<?x16x64xbf16>, %latent: tensor<?x64x1x512xbf16>,
                     %kp: tensor<?x64x1x64xbf16>, %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>,
                     %pos: tensor<?xi32>) -> tensor<?x16x512xbf16> {
  %o = rudnn.paged_mla %q, %qp, %latent, %kp, %table, %lengths, %seq, %pos {scale = 0.0721687824 : f32, causal = true, splits = 2,
         kernel_config = {tensor_core = 0, block_rows = 16, block_keys = 32, row_lanes = 16, max_value_dim = 512}}
       : tensor<?x16x512xbf16>, tensor<?x16x64xbf16>, tensor<?x64x1x512xbf16>, tensor<?x64x1x64xbf16>, tensor<?x?xi32>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  return %o : tensor<?x16x512xbf16>
}

// Unsplit MLA, H = 128 (group 128 > 16 rows: one query row per item), f32.
// CHECK-LABEL: func.func @mla_h128
// CHECK: rudnn.launch @rudnn_paged_mla_f32_16x32_l16_v512(
// CHECK-SAME: grid [#rudnn.size<dim(0, 0)>, #rudnn.size<1>, #rudnn.size<1>] block [256, 1, 1] shared 113664
// CHECK-SAME: #rudnn.param<"out" : "float*" = buffer(8)>, #rudnn.param<"partial" : "float*" = null>
// CHECK-NOT: rudnn.launch
func.func @mla_h128(%q: tensor<?x128x512xf32>, %qp: tensor<?x128x64xf32>, %latent: tensor<?x?x1x512xf32>,
                    %kp: tensor<?x?x1x64xf32>, %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>,
                    %pos: tensor<?xi32>) -> tensor<?x128x512xf32> {
  %o = rudnn.paged_mla %q, %qp, %latent, %kp, %table, %lengths, %seq, %pos {scale = 0.0721687824 : f32, causal = false, splits = 1,
         kernel_config = {tensor_core = 0, block_rows = 16, block_keys = 32, row_lanes = 16, max_value_dim = 512}}
       : tensor<?x128x512xf32>, tensor<?x128x64xf32>, tensor<?x?x1x512xf32>, tensor<?x?x1x64xf32>, tensor<?x?xi32>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x128x512xf32>
  return %o : tensor<?x128x512xf32>
}

// MLA on tensor cores (R = 512, P = 64, H = 128, f16): paged_mla_mma with MlaMmaPolicy<R, P, 32>,
// the plain kernel's parameters, 256 threads (8 warps), shared (64 + 2 · 32) · 584 · 2 + 64 · 40 · 2
// + 3 · 64 · 4 = 155392.
// CHECK-LABEL: func.func @mla_tensor_cores
// CHECK: rudnn.launch @rudnn_paged_mla_mma_f16_r512_p64_64x32(
// CHECK-SAME: header "rudnn/paged/mla_mma.cuh" function "rudnn::paged::paged_mla_mma" args ["rudnn::f16", "rudnn::paged::MlaMmaPolicy<512, 64, 32>"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0)>, #rudnn.size<1>, #rudnn.size<1>] block [256, 1, 1] shared 155392
// CHECK-SAME: #rudnn.param<"q_rope" : "const rudnn::f16*" = buffer(1)>
// CHECK-SAME: #rudnn.param<"v" : "const rudnn::f16*" = null>
// CHECK-SAME: #rudnn.param<"out" : "rudnn::f16*" = buffer(8)>, #rudnn.param<"partial" : "float*" = null>
// CHECK-SAME: #rudnn.param<"rope_dim" : "long long" = size(64)>
// CHECK-NOT: rudnn.launch
func.func @mla_tensor_cores(%q: tensor<?x128x512xf16>, %qp: tensor<?x128x64xf16>, %latent: tensor<?x?x1x512xf16>,
                            %kp: tensor<?x?x1x64xf16>, %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>,
                            %pos: tensor<?xi32>) -> tensor<?x128x512xf16> {
  %o = rudnn.paged_mla %q, %qp, %latent, %kp, %table, %lengths, %seq, %pos {scale = 0.0721687824 : f32, causal = true, splits = 1,
         kernel_config = {tensor_core = 1, block_rows = 64, block_keys = 32, row_lanes = 0, max_value_dim = 512}}
       : tensor<?x128x512xf16>, tensor<?x128x64xf16>, tensor<?x?x1x512xf16>, tensor<?x?x1x64xf16>, tensor<?x?xi32>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x128x512xf16>
  return %o : tensor<?x128x512xf16>
}

// MLA on Hopper's warpgroup MMA (wgmma = 1; R = 512, P = 64, H = 128, bf16): paged_mla_wgmma with
// MlaWgmmaPolicy<R, P>, the plain kernel's parameters, 256 threads (two warpgroups), shared
// (64 + 2 · 64) · 576 · 2 + 64 · 64 · 2 + 3 · 64 · 4 + 1024 = 231168.
// CHECK-LABEL: func.func @mla_wgmma
// CHECK: rudnn.launch @rudnn_paged_mla_wgmma_bf16_r512_p64_64x64(
// CHECK-SAME: header "rudnn/paged/mla_wgmma.cuh" function "rudnn::paged::paged_mla_wgmma" args ["rudnn::bf16", "rudnn::paged::MlaWgmmaPolicy<512, 64>"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0)>, #rudnn.size<1>, #rudnn.size<1>] block [256, 1, 1] shared 231168
// CHECK-SAME: #rudnn.param<"q_rope" : "const rudnn::bf16*" = buffer(1)>
// CHECK-SAME: #rudnn.param<"rope_dim" : "long long" = size(64)>
// CHECK-NOT: rudnn.launch
func.func @mla_wgmma(%q: tensor<?x128x512xbf16>, %qp: tensor<?x128x64xbf16>, %latent: tensor<?x?x1x512xbf16>,
                     %kp: tensor<?x?x1x64xbf16>, %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>,
                     %pos: tensor<?xi32>) -> tensor<?x128x512xbf16> {
  %o = rudnn.paged_mla %q, %qp, %latent, %kp, %table, %lengths, %seq, %pos {scale = 0.0721687824 : f32, causal = true, splits = 1,
         kernel_config = {tensor_core = 1, block_rows = 64, block_keys = 64, row_lanes = 0, max_value_dim = 512, wgmma = 1}}
       : tensor<?x128x512xbf16>, tensor<?x128x64xbf16>, tensor<?x?x1x512xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?xi32>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x128x512xbf16>
  return %o : tensor<?x128x512xbf16>
}

// Append (Hkv 8, D = 128, Dv = 64, bf16): copy key_cache (slot 2) → new_key_cache (slot 8) and
// value_cache (slot 3) → new_value_cache (slot 9) over pages · page_size · Hkv · D elements (a fixed
// grid of 1024 blocks of 256 threads, 16-byte copies), then the
// append over Q · 8 blocks writes rows into slots 8 and 9.
// CHECK-LABEL: func.func @append
// CHECK: %[[K:.*]] = rudnn.launch @rudnn_paged_copy_bf16(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7)
// CHECK-SAME: header "rudnn/paged/append.cuh" function "rudnn::paged::paged_copy" args ["rudnn::bf16", "256"]
// CHECK-SAME: grid [#rudnn.size<1024>, #rudnn.size<1>, #rudnn.size<1>] block [256, 1, 1] shared 0
// CHECK-SAME: params [#rudnn.param<"src" : "const rudnn::bf16*" = buffer(2)>, #rudnn.param<"dst" : "rudnn::bf16*" = buffer(8)>, #rudnn.param<"elements" : "long long" = size(rows(2) * dim(2, 3))>]
// CHECK-SAME: -> tensor<?x?x8x128xbf16>
// CHECK: %[[V:.*]] = rudnn.launch @rudnn_paged_copy_bf16(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7, %[[K]])
// CHECK-SAME: grid [#rudnn.size<1024>, #rudnn.size<1>, #rudnn.size<1>] block [256, 1, 1] shared 0
// CHECK-SAME: params [#rudnn.param<"src" : "const rudnn::bf16*" = buffer(3)>, #rudnn.param<"dst" : "rudnn::bf16*" = buffer(9)>, #rudnn.param<"elements" : "long long" = size(rows(3) * dim(3, 3))>]
// CHECK-SAME: -> tensor<?x?x8x64xbf16>
// CHECK: rudnn.launch @rudnn_paged_append_bf16(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7, %[[K]], %[[V]])
// CHECK-SAME: header "rudnn/paged/append.cuh" function "rudnn::paged::paged_append" args ["rudnn::bf16", "128"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0) * 8>, #rudnn.size<1>, #rudnn.size<1>] block [128, 1, 1] shared 0
// CHECK-SAME: params [#rudnn.param<"key" : "const rudnn::bf16*" = buffer(0)>, #rudnn.param<"value" : "const rudnn::bf16*" = buffer(1)>, #rudnn.param<"key_cache" : "rudnn::bf16*" = buffer(8)>, #rudnn.param<"value_cache" : "rudnn::bf16*" = buffer(9)>, #rudnn.param<"page_table" : "const rudnn::i32*" = buffer(4)>, #rudnn.param<"sequence_ids" : "const rudnn::i32*" = buffer(6)>, #rudnn.param<"positions" : "const rudnn::i32*" = buffer(7)>
// CHECK-SAME: #rudnn.param<"queries" : "long long" = size(dim(0, 0))>, #rudnn.param<"kv_heads" : "long long" = size(8)>, #rudnn.param<"head_dim" : "long long" = size(128)>, #rudnn.param<"value_dim" : "long long" = size(64)>, #rudnn.param<"page_size" : "long long" = size(dim(2, 1))>, #rudnn.param<"table_stride" : "long long" = size(dim(4, 1))>]
// CHECK-SAME: -> ()
// CHECK: return %[[K]], %[[V]]
func.func @append(%k: tensor<?x8x128xbf16>, %v: tensor<?x8x64xbf16>, %kc: tensor<?x?x8x128xbf16>,
                  %vc: tensor<?x?x8x64xbf16>, %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>,
                  %pos: tensor<?xi32>) -> (tensor<?x?x8x128xbf16>, tensor<?x?x8x64xbf16>) {
  %nk, %nv = rudnn.paged_append %k, %v, %kc, %vc, %table, %lengths, %seq, %pos {kernel_config = {}}
             : tensor<?x8x128xbf16>, tensor<?x8x64xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x64xbf16>,
               tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x?x8x128xbf16>, tensor<?x?x8x64xbf16>
  return %nk, %nv : tensor<?x?x8x128xbf16>, tensor<?x?x8x64xbf16>
}

// The backward (SPEC §9, the atomic path): paged_zero clears an FP32 scratch per history gradient
// (dk, dv: the caches' element counts), paged_attention_backward_unit (one warp per query row and
// head: grid Q · Hq / warps, rudnn::paged::BackwardPolicy<warps, key columns per lane, value columns
// per lane, value_from_key>) writes dq and adds into the scratch, paged_round_gradients rounds each
// scratch into its gradient.
// CHECK-LABEL: func.func @attention_backward
// CHECK: %[[ZK:.*]] = rudnn.launch @rudnn_paged_zero({{.*}}) header "rudnn/paged/backward.cuh" function "rudnn::paged::paged_zero" args ["256"]
// CHECK-SAME: grid [#rudnn.size<rows(1) * dim(1, 3) ceildiv 1024>, #rudnn.size<1>, #rudnn.size<1>] block [256, 1, 1] shared 0
// CHECK-SAME: result_elements = [#rudnn.size<rows(1) * dim(1, 3)>]
// CHECK: %[[ZV:.*]] = rudnn.launch @rudnn_paged_zero(
// CHECK-SAME: result_elements = [#rudnn.size<rows(2) * dim(2, 3)>]
// CHECK: %[[DQ:.*]] = rudnn.launch @rudnn_paged_attention_backward_bf16_w4_k4_v4({{.*}}, %[[ZK]], %[[ZV]])
// CHECK-SAME: function "rudnn::paged::paged_attention_backward_unit" args ["rudnn::bf16", "rudnn::paged::BackwardPolicy<4, 4, 4, false>"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0) * 8 ceildiv 4>, #rudnn.size<1>, #rudnn.size<1>] block [128, 1, 1] shared 0
// CHECK-SAME: #rudnn.param<"grad_out" : "const rudnn::bf16*" = buffer(3)>
// CHECK-SAME: #rudnn.param<"dq" : "rudnn::bf16*" = buffer(10)>, #rudnn.param<"dq_rope" : "rudnn::bf16*" = null>, #rudnn.param<"dk" : "float*" = buffer(8)>, #rudnn.param<"dk_rope" : "float*" = null>, #rudnn.param<"dv" : "float*" = buffer(9)>
// CHECK-SAME: rudnn.min_blocks = 1
// CHECK: %[[DK:.*]] = rudnn.launch @rudnn_paged_round_gradients_bf16({{.*}}) header "rudnn/paged/backward.cuh" function "rudnn::paged::paged_round_gradients" args ["rudnn::bf16", "256"]
// CHECK-SAME: #rudnn.param<"scratch" : "const float*" = buffer(8)>, #rudnn.param<"out" : "rudnn::bf16*" = buffer(11)>
// CHECK: %[[DV:.*]] = rudnn.launch @rudnn_paged_round_gradients_bf16(
// CHECK-SAME: #rudnn.param<"scratch" : "const float*" = buffer(9)>, #rudnn.param<"out" : "rudnn::bf16*" = buffer(12)>
// CHECK: return %[[DQ]], %[[DK]], %[[DV]]
func.func @attention_backward(%q: tensor<?x8x64xbf16>, %k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x32xbf16>, %go: tensor<?x8x32xbf16>,
                              %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>)
    -> (tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>) {
  %dq, %dk, %dv = rudnn.paged_attention_backward %q, %k, %v, %go, %t, %l, %s, %p {scale = 0.125 : f32, causal = true, kernel_config = {warps = 4}}
      : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>, tensor<?x8x32xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
      -> tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>
  return %dq, %dk, %dv : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>
}

// On tensor cores (D = Dv = 64, bf16, {warps = 4, tensor_core = 1}): the same zero / round kernels
// around paged_attention_backward_mma with BackwardMmaPolicy<64, 32>, the plain kernel's parameters,
// one 128-thread block per (query row, kv head), shared (2 · 64 + 4 · 32) · 72 · 2 + 2 · 64 · 40 · 2
// = 47104.
// CHECK-LABEL: func.func @attention_backward_tensor_cores
// CHECK: rudnn.launch @rudnn_paged_zero(
// CHECK: rudnn.launch @rudnn_paged_zero(
// CHECK: rudnn.launch @rudnn_paged_attention_backward_mma_bf16_d64({{.*}}) header "rudnn/paged/backward_mma.cuh" function "rudnn::paged::paged_attention_backward_mma" args ["rudnn::bf16", "rudnn::paged::BackwardMmaPolicy<64, 32>"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0) * 2>, #rudnn.size<1>, #rudnn.size<1>] block [128, 1, 1] shared 47104
// CHECK-SAME: #rudnn.param<"q_rope" : "const rudnn::bf16*" = null>
// CHECK-SAME: #rudnn.param<"row_stats" : "float*" = null>
// CHECK: rudnn.launch @rudnn_paged_round_gradients_bf16(
// CHECK: rudnn.launch @rudnn_paged_round_gradients_bf16(
func.func @attention_backward_tensor_cores(%q: tensor<?x8x64xbf16>, %k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x64xbf16>, %go: tensor<?x8x64xbf16>,
                                          %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>)
    -> (tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>) {
  %dq, %dk, %dv = rudnn.paged_attention_backward %q, %k, %v, %go, %t, %l, %s, %p {scale = 0.125 : f32, causal = true, kernel_config = {warps = 4, tensor_core = 1}}
      : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x8x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
      -> tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>
  return %dq, %dk, %dv : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>
}

// The ordered path on tensor cores (cache_rows and compact_history set): paged_attention_backward_mma
// writes dq and the statistics (slot 11), then paged_attention_backward_history_mma
// (HistoryMmaPolicy<64, true>: compaction reads page_order, slot 9; row caching selects nothing, so
// no _rows) over pages · Hkv 128-thread blocks with (2 · 32 + 4 · 64) · 72 · 2 + 2 · 64 · 40 · 2 =
// 56320 bytes of shared memory, writing dk and dv (slots 12, 13); no scratch, no rounding.
// CHECK-LABEL: func.func @attention_backward_ordered_tensor_cores
// CHECK-NOT: rudnn_paged_zero
// CHECK: %[[U:.*]]:2 = rudnn.launch @rudnn_paged_attention_backward_mma_bf16_d64(
// CHECK-SAME: #rudnn.param<"dk" : "float*" = null>, #rudnn.param<"dk_rope" : "float*" = null>, #rudnn.param<"dv" : "float*" = null>, #rudnn.param<"row_stats" : "float*" = buffer(11)>
// CHECK: %[[H:.*]]:2 = rudnn.launch @rudnn_paged_attention_backward_history_mma_bf16_d64_compact({{.*}}, %[[U]]#0, %[[U]]#1)
// CHECK-SAME: header "rudnn/paged/backward_mma.cuh" function "rudnn::paged::paged_attention_backward_history_mma"
// CHECK-SAME: args ["rudnn::bf16", "rudnn::paged::HistoryMmaPolicy<64, true>"]
// CHECK-SAME: grid [#rudnn.size<dim(1, 0) * 2>, #rudnn.size<1>, #rudnn.size<1>] block [128, 1, 1] shared 56320
// CHECK-SAME: #rudnn.param<"row_stats" : "const float*" = buffer(11)>, #rudnn.param<"history_index" : "const rudnn::i32*" = buffer(8)>, #rudnn.param<"page_order" : "const rudnn::i32*" = buffer(9)>
// CHECK-SAME: #rudnn.param<"dk" : "rudnn::bf16*" = buffer(12)>, #rudnn.param<"dk_rope" : "rudnn::bf16*" = null>, #rudnn.param<"dv" : "rudnn::bf16*" = buffer(13)>
// CHECK-NOT: rudnn_paged_round_gradients
// CHECK: return %[[U]]#0, %[[H]]#0, %[[H]]#1
func.func @attention_backward_ordered_tensor_cores(%q: tensor<?x8x64xbf16>, %k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x64xbf16>, %go: tensor<?x8x64xbf16>,
                                                   %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>,
                                                   %index: tensor<?xi32>, %order: tensor<?xi32>)
    -> (tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>) {
  %dq, %dk, %dv = rudnn.paged_attention_backward %q, %k, %v, %go, %t, %l, %s, %p ordered(%index, %order : tensor<?xi32>, tensor<?xi32>)
      {scale = 0.125 : f32, causal = true, cache_rows, compact_history, kernel_config = {warps = 4, tensor_core = 1}}
      : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x8x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
      -> tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>
  return %dq, %dk, %dv : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>
}

// MLA at R = 512 / P = 64: the latent scratch takes the key and the value contribution; 18 key
// columns per lane → 24, 16 value columns; the query gradients are the kernel's two results.
// CHECK-LABEL: func.func @mla_backward
// CHECK: %[[ZL:.*]] = rudnn.launch @rudnn_paged_zero(
// CHECK: %[[ZP:.*]] = rudnn.launch @rudnn_paged_zero(
// CHECK: %[[G:.*]]:2 = rudnn.launch @rudnn_paged_mla_backward_f16_w4_k24_v16({{.*}}, %[[ZL]], %[[ZP]])
// CHECK-SAME: args ["rudnn::f16", "rudnn::paged::BackwardPolicy<4, 24, 16, true>"]
// CHECK-SAME: #rudnn.param<"v" : "const rudnn::f16*" = null>
// CHECK-SAME: #rudnn.param<"dq" : "rudnn::f16*" = buffer(11)>, #rudnn.param<"dq_rope" : "rudnn::f16*" = buffer(12)>, #rudnn.param<"dk" : "float*" = buffer(9)>, #rudnn.param<"dk_rope" : "float*" = buffer(10)>, #rudnn.param<"dv" : "float*" = null>
// CHECK: %[[DL:.*]] = rudnn.launch @rudnn_paged_round_gradients_f16(
// CHECK: %[[DP:.*]] = rudnn.launch @rudnn_paged_round_gradients_f16(
// CHECK: return %[[G]]#0, %[[G]]#1, %[[DL]], %[[DP]]
func.func @mla_backward(%q: tensor<?x16x512xf16>, %qp: tensor<?x16x64xf16>, %c: tensor<32x64x1x512xf16>, %kp: tensor<32x64x1x64xf16>,
                        %go: tensor<?x16x512xf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>)
    -> (tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>) {
  %a, %b, %cc, %d = rudnn.paged_mla_backward %q, %qp, %c, %kp, %go, %t, %l, %s, %p {scale = 0.0416666679 : f32, causal = false, kernel_config = {warps = 4}}
      : tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>, tensor<?x16x512xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
      -> tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>
  return %a, %b, %cc, %d : tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>
}

// The ordered path (ordered(history_index, page_order)): no scratch and no atomics. The unit kernel
// writes dq and the FP32 row statistics (Q · Hq · 2 floats, slot 11 after the 10 operands and dq),
// then paged_attention_backward_history (one block per page and kv head: grid pages · Hkv,
// rudnn::paged::HistoryPolicy<warps, key lanes, value lanes, value_from_key, cache_rows,
// compact_history>) reads them and the index (slot 8) and writes dk and dv (slots 12, 13). With
// cache_rows (_rows) it stages the rows in 4 · 31 · 258 = 31992 bytes of shared memory; with
// compact_history (_compact) it reads page_order (slot 9), otherwise that is null.
// CHECK-LABEL: func.func @attention_backward_ordered
// CHECK-NOT: rudnn_paged_zero
// CHECK: %[[U:.*]]:2 = rudnn.launch @rudnn_paged_attention_backward_bf16_w4_k4_v4(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7, %arg8, %arg9)
// CHECK-SAME: function "rudnn::paged::paged_attention_backward_unit" args ["rudnn::bf16", "rudnn::paged::BackwardPolicy<4, 4, 4, false>"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0) * 8 ceildiv 4>, #rudnn.size<1>, #rudnn.size<1>] block [128, 1, 1] shared 0
// CHECK-SAME: #rudnn.param<"dq" : "rudnn::bf16*" = buffer(10)>, #rudnn.param<"dq_rope" : "rudnn::bf16*" = null>, #rudnn.param<"dk" : "float*" = null>, #rudnn.param<"dk_rope" : "float*" = null>, #rudnn.param<"dv" : "float*" = null>, #rudnn.param<"row_stats" : "float*" = buffer(11)>
// CHECK-SAME: result_elements = [#rudnn.size<rows(0) * dim(0, 2)>, #rudnn.size<rows(0) * 2>]
// CHECK-SAME: -> (tensor<?x8x64xbf16>, tensor<?xf32>)
// CHECK: %[[H:.*]]:2 = rudnn.launch @rudnn_paged_attention_backward_history_bf16_w4_k4_v4_rows_compact({{.*}}, %[[U]]#0, %[[U]]#1)
// CHECK-SAME: header "rudnn/paged/backward.cuh" function "rudnn::paged::paged_attention_backward_history"
// CHECK-SAME: args ["rudnn::bf16", "rudnn::paged::HistoryPolicy<4, 4, 4, false, true, true>"]
// CHECK-SAME: grid [#rudnn.size<dim(1, 0) * 2>, #rudnn.size<1>, #rudnn.size<1>] block [128, 1, 1] shared 31992
// CHECK-SAME: #rudnn.param<"row_stats" : "const float*" = buffer(11)>, #rudnn.param<"history_index" : "const rudnn::i32*" = buffer(8)>, #rudnn.param<"page_order" : "const rudnn::i32*" = buffer(9)>
// CHECK-SAME: #rudnn.param<"dk" : "rudnn::bf16*" = buffer(12)>, #rudnn.param<"dk_rope" : "rudnn::bf16*" = null>, #rudnn.param<"dv" : "rudnn::bf16*" = buffer(13)>
// CHECK-SAME: #rudnn.param<"sequences" : "long long" = size(dim(5, 0))>, #rudnn.param<"pages" : "long long" = size(dim(1, 0))>
// CHECK-SAME: rudnn.min_blocks = 1
// CHECK-SAME: -> (tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>)
// CHECK-NOT: rudnn_paged_round_gradients
// CHECK: return %[[U]]#0, %[[H]]#0, %[[H]]#1
func.func @attention_backward_ordered(%q: tensor<?x8x64xbf16>, %k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x32xbf16>, %go: tensor<?x8x32xbf16>,
                                      %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>,
                                      %index: tensor<?xi32>, %order: tensor<?xi32>)
    -> (tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>) {
  %dq, %dk, %dv = rudnn.paged_attention_backward %q, %k, %v, %go, %t, %l, %s, %p ordered(%index, %order : tensor<?xi32>, tensor<?xi32>)
      {scale = 0.125 : f32, causal = true, cache_rows, compact_history, kernel_config = {warps = 4}}
      : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>, tensor<?x8x32xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
      -> tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>
  return %dq, %dk, %dv : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>
}

// Ordered without the switches (f32, the default 4 warps): no suffix, no shared memory, page_order
// null; with cache_rows alone only _rows.
// CHECK-LABEL: func.func @attention_backward_ordered_plain
// CHECK: %[[U:.*]]:2 = rudnn.launch @rudnn_paged_attention_backward_f32_w4_k4_v4(
// CHECK: %[[H:.*]]:2 = rudnn.launch @rudnn_paged_attention_backward_history_f32_w4_k4_v4({{.*}}, %[[U]]#0, %[[U]]#1)
// CHECK-SAME: args ["float", "rudnn::paged::HistoryPolicy<4, 4, 4, false, false, false>"]
// CHECK-SAME: block [128, 1, 1] shared 0
// CHECK-SAME: #rudnn.param<"history_index" : "const rudnn::i32*" = buffer(8)>, #rudnn.param<"page_order" : "const rudnn::i32*" = null>
// CHECK: rudnn.launch @rudnn_paged_attention_backward_f32_w4_k4_v4(
// CHECK: rudnn.launch @rudnn_paged_attention_backward_history_f32_w4_k4_v4_rows(
// CHECK-SAME: args ["float", "rudnn::paged::HistoryPolicy<4, 4, 4, false, true, false>"]
// CHECK-SAME: shared 31992
// CHECK-SAME: #rudnn.param<"page_order" : "const rudnn::i32*" = null>
// CHECK: return %[[U]]#0, %[[H]]#0, %[[H]]#1
func.func @attention_backward_ordered_plain(%q: tensor<?x8x64xf32>, %k: tensor<?x16x2x64xf32>, %v: tensor<?x16x2x32xf32>, %go: tensor<?x8x32xf32>,
                                            %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>,
                                            %index: tensor<?xi32>, %order: tensor<?xi32>)
    -> (tensor<?x8x64xf32>, tensor<?x16x2x64xf32>, tensor<?x16x2x32xf32>, tensor<?x16x2x64xf32>) {
  %dq, %dk, %dv = rudnn.paged_attention_backward %q, %k, %v, %go, %t, %l, %s, %p ordered(%index, %order : tensor<?xi32>, tensor<?xi32>)
      {scale = 0.125 : f32, causal = false}
      : tensor<?x8x64xf32>, tensor<?x16x2x64xf32>, tensor<?x16x2x32xf32>, tensor<?x8x32xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
      -> tensor<?x8x64xf32>, tensor<?x16x2x64xf32>, tensor<?x16x2x32xf32>
  %dq2, %dk2, %dv2 = rudnn.paged_attention_backward %q, %k, %v, %go, %t, %l, %s, %p ordered(%index, %order : tensor<?xi32>, tensor<?xi32>)
      {scale = 0.125 : f32, causal = false, cache_rows}
      : tensor<?x8x64xf32>, tensor<?x16x2x64xf32>, tensor<?x16x2x32xf32>, tensor<?x8x32xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
      -> tensor<?x8x64xf32>, tensor<?x16x2x64xf32>, tensor<?x16x2x32xf32>
  return %dq, %dk, %dv, %dk2 : tensor<?x8x64xf32>, tensor<?x16x2x64xf32>, tensor<?x16x2x32xf32>, tensor<?x16x2x64xf32>
}

// MLA on tensor cores (f16, R = 512, P = 64, {warps = 4, tensor_core = 1}): the same zero / round
// kernels around paged_mla_backward_mma with MlaBackwardMmaPolicy<512, 64>, the plain kernel's
// parameters, one 256-thread block per query row, shared 4 · 32 · 584 · 2 + 2 · 32 · 40 · 2 +
// (32 · 32 + 8 · 32) · 4 = 159744.
// CHECK-LABEL: func.func @mla_backward_tensor_cores
// CHECK: %[[ZL:.*]] = rudnn.launch @rudnn_paged_zero(
// CHECK: %[[ZP:.*]] = rudnn.launch @rudnn_paged_zero(
// CHECK: %[[G:.*]]:2 = rudnn.launch @rudnn_paged_mla_backward_mma_f16_r512_p64({{.*}}, %[[ZL]], %[[ZP]]) header "rudnn/paged/mla_backward_mma.cuh" function "rudnn::paged::paged_mla_backward_mma" args ["rudnn::f16", "rudnn::paged::MlaBackwardMmaPolicy<512, 64>"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0) * 1>, #rudnn.size<1>, #rudnn.size<1>] block [256, 1, 1] shared 159744
// CHECK-SAME: #rudnn.param<"dq" : "rudnn::f16*" = buffer(11)>, #rudnn.param<"dq_rope" : "rudnn::f16*" = buffer(12)>, #rudnn.param<"dk" : "float*" = buffer(9)>, #rudnn.param<"dk_rope" : "float*" = buffer(10)>, #rudnn.param<"dv" : "float*" = null>
// CHECK: %[[DL:.*]] = rudnn.launch @rudnn_paged_round_gradients_f16(
// CHECK: %[[DP:.*]] = rudnn.launch @rudnn_paged_round_gradients_f16(
// CHECK: return %[[G]]#0, %[[G]]#1, %[[DL]], %[[DP]]
func.func @mla_backward_tensor_cores(%q: tensor<?x16x512xf16>, %qp: tensor<?x16x64xf16>, %c: tensor<32x64x1x512xf16>, %kp: tensor<32x64x1x64xf16>,
                                     %go: tensor<?x16x512xf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>)
    -> (tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>) {
  %a, %b, %cc, %d = rudnn.paged_mla_backward %q, %qp, %c, %kp, %go, %t, %l, %s, %p {scale = 0.0416666679 : f32, causal = false, kernel_config = {warps = 4, tensor_core = 1}}
      : tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>, tensor<?x16x512xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
      -> tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>
  return %a, %b, %cc, %d : tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>
}

// The ordered MLA on tensor cores: the statistics from paged_mla_backward_mma, then
// paged_mla_backward_history_mma (MlaHistoryMmaPolicy<512, 64, false>) over pages 256-thread blocks
// with 3 · 32 · 584 · 2 + 2 · 32 · 40 · 2 + 32 · 32 · 4 = 121344 bytes of shared memory.
// CHECK-LABEL: func.func @mla_backward_ordered_tensor_cores
// CHECK: %[[U:.*]]:3 = rudnn.launch @rudnn_paged_mla_backward_mma_f16_r512_p64(
// CHECK-SAME: #rudnn.param<"dk" : "float*" = null>, #rudnn.param<"dk_rope" : "float*" = null>, #rudnn.param<"dv" : "float*" = null>, #rudnn.param<"row_stats" : "float*" = buffer(13)>
// CHECK: rudnn.launch @rudnn_paged_mla_backward_history_mma_f16_r512_p64({{.*}}, %[[U]]#0, %[[U]]#1, %[[U]]#2)
// CHECK-SAME: header "rudnn/paged/mla_backward_mma.cuh" function "rudnn::paged::paged_mla_backward_history_mma"
// CHECK-SAME: args ["rudnn::f16", "rudnn::paged::MlaHistoryMmaPolicy<512, 64, false>"]
// CHECK-SAME: grid [#rudnn.size<dim(2, 0) * 1>, #rudnn.size<1>, #rudnn.size<1>] block [256, 1, 1] shared 121344
func.func @mla_backward_ordered_tensor_cores(%q: tensor<?x16x512xf16>, %qp: tensor<?x16x64xf16>, %c: tensor<32x64x1x512xf16>, %kp: tensor<32x64x1x64xf16>,
                                %go: tensor<?x16x512xf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>,
                                %index: tensor<?xi32>, %order: tensor<?xi32>)
    -> (tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>) {
  %a, %b, %cc, %d = rudnn.paged_mla_backward %q, %qp, %c, %kp, %go, %t, %l, %s, %p ordered(%index, %order : tensor<?xi32>, tensor<?xi32>)
      {scale = 0.0416666679 : f32, causal = false, kernel_config = {warps = 4, tensor_core = 1}}
      : tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>, tensor<?x16x512xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
      -> tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>
  return %a, %b, %cc, %d : tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>
}

// Ordered MLA with compact_history: the unit writes dq, dq_rope and the statistics (slot 13 after
// the 11 operands), the history dlatent and dk_rope (slots 14, 15) over pages · 1 blocks.
// CHECK-LABEL: func.func @mla_backward_ordered
// CHECK: %[[U:.*]]:3 = rudnn.launch @rudnn_paged_mla_backward_f16_w4_k24_v16(
// CHECK-SAME: #rudnn.param<"row_stats" : "float*" = buffer(13)>
// CHECK: %[[H:.*]]:2 = rudnn.launch @rudnn_paged_mla_backward_history_f16_w4_k24_v16_compact({{.*}}, %[[U]]#0, %[[U]]#1, %[[U]]#2)
// CHECK-SAME: args ["rudnn::f16", "rudnn::paged::HistoryPolicy<4, 24, 16, true, false, true>"]
// CHECK-SAME: grid [#rudnn.size<dim(2, 0) * 1>, #rudnn.size<1>, #rudnn.size<1>] block [128, 1, 1] shared 0
// CHECK-SAME: #rudnn.param<"history_index" : "const rudnn::i32*" = buffer(9)>, #rudnn.param<"page_order" : "const rudnn::i32*" = buffer(10)>
// CHECK-SAME: #rudnn.param<"dk" : "rudnn::f16*" = buffer(14)>, #rudnn.param<"dk_rope" : "rudnn::f16*" = buffer(15)>, #rudnn.param<"dv" : "rudnn::f16*" = null>
// CHECK: return %[[U]]#0, %[[U]]#1, %[[H]]#0, %[[H]]#1
func.func @mla_backward_ordered(%q: tensor<?x16x512xf16>, %qp: tensor<?x16x64xf16>, %c: tensor<32x64x1x512xf16>, %kp: tensor<32x64x1x64xf16>,
                                %go: tensor<?x16x512xf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>,
                                %index: tensor<?xi32>, %order: tensor<?xi32>)
    -> (tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>) {
  %a, %b, %cc, %d = rudnn.paged_mla_backward %q, %qp, %c, %kp, %go, %t, %l, %s, %p ordered(%index, %order : tensor<?xi32>, tensor<?xi32>)
      {scale = 0.0416666679 : f32, causal = false, compact_history}
      : tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>, tensor<?x16x512xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
      -> tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>
  return %a, %b, %cc, %d : tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>
}

// Unused results are not computed. Atomic, only dq returned: no scratch, no rounding, the unit
// kernel alone with null history pointers and one result (slot 8).
// CHECK-LABEL: func.func @attention_backward_dq_only
// CHECK-NOT: rudnn_paged_zero
// CHECK: %[[DQ:.*]] = rudnn.launch @rudnn_paged_attention_backward_bf16_w4_k4_v4(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7)
// CHECK-SAME: #rudnn.param<"dq" : "rudnn::bf16*" = buffer(8)>, #rudnn.param<"dq_rope" : "rudnn::bf16*" = null>, #rudnn.param<"dk" : "float*" = null>, #rudnn.param<"dk_rope" : "float*" = null>, #rudnn.param<"dv" : "float*" = null>, #rudnn.param<"row_stats" : "float*" = null>
// CHECK-SAME: result_elements = [#rudnn.size<rows(0) * dim(0, 2)>]
// CHECK-SAME: -> tensor<?x8x64xbf16>
// CHECK-NOT: rudnn_paged_zero
// CHECK-NOT: rudnn_paged_round_gradients
// CHECK-NOT: rudnn.launch
// CHECK: return %[[DQ]] : tensor<?x8x64xbf16>
func.func @attention_backward_dq_only(%q: tensor<?x8x64xbf16>, %k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x32xbf16>, %go: tensor<?x8x32xbf16>,
                                      %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>) -> tensor<?x8x64xbf16> {
  %dq, %dk, %dv = rudnn.paged_attention_backward %q, %k, %v, %go, %t, %l, %s, %p {scale = 0.125 : f32, causal = true, kernel_config = {warps = 4}}
      : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>, tensor<?x8x32xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
      -> tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>
  return %dq : tensor<?x8x64xbf16>
}

// Atomic, only dk used: one zeroed scratch (the key cache's elements, slot 8), the unit kernel with
// no results (dq and dv null, dk into the scratch), one rounding into dk (slot 9).
// CHECK-LABEL: func.func @attention_backward_dk_only
// CHECK: %[[ZK:.*]] = rudnn.launch @rudnn_paged_zero(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7)
// CHECK-SAME: result_elements = [#rudnn.size<rows(1) * dim(1, 3)>]
// CHECK-NOT: rudnn_paged_zero
// CHECK: rudnn.launch @rudnn_paged_attention_backward_bf16_w4_k4_v4(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7, %[[ZK]])
// CHECK-SAME: #rudnn.param<"dq" : "rudnn::bf16*" = null>, #rudnn.param<"dq_rope" : "rudnn::bf16*" = null>, #rudnn.param<"dk" : "float*" = buffer(8)>, #rudnn.param<"dk_rope" : "float*" = null>, #rudnn.param<"dv" : "float*" = null>
// CHECK-SAME: -> ()
// CHECK: %[[DK:.*]] = rudnn.launch @rudnn_paged_round_gradients_bf16(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7, %[[ZK]])
// CHECK-SAME: #rudnn.param<"scratch" : "const float*" = buffer(8)>, #rudnn.param<"out" : "rudnn::bf16*" = buffer(9)>
// CHECK-SAME: -> tensor<?x16x2x64xbf16>
// CHECK-NOT: rudnn.launch
// CHECK: return %[[DK]] : tensor<?x16x2x64xbf16>
func.func @attention_backward_dk_only(%q: tensor<?x8x64xbf16>, %k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x32xbf16>, %go: tensor<?x8x32xbf16>,
                                      %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>) -> tensor<?x16x2x64xbf16> {
  %dq, %dk, %dv = rudnn.paged_attention_backward %q, %k, %v, %go, %t, %l, %s, %p {scale = 0.125 : f32, causal = true, kernel_config = {warps = 4}}
      : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>, tensor<?x8x32xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
      -> tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>
  return %dk : tensor<?x16x2x64xbf16>
}

// Ordered, only dq used: the unit kernel (dq and its statistics) and no history launch.
// CHECK-LABEL: func.func @attention_backward_ordered_dq_only
// CHECK: %[[U:.*]]:2 = rudnn.launch @rudnn_paged_attention_backward_f32_w4_k4_v4(
// CHECK-NOT: rudnn.launch
// CHECK: return %[[U]]#0 : tensor<?x8x64xf32>
func.func @attention_backward_ordered_dq_only(%q: tensor<?x8x64xf32>, %k: tensor<?x16x2x64xf32>, %v: tensor<?x16x2x32xf32>, %go: tensor<?x8x32xf32>,
                                              %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>,
                                              %index: tensor<?xi32>, %order: tensor<?xi32>) -> tensor<?x8x64xf32> {
  %dq, %dk, %dv = rudnn.paged_attention_backward %q, %k, %v, %go, %t, %l, %s, %p ordered(%index, %order : tensor<?xi32>, tensor<?xi32>)
      {scale = 0.125 : f32, causal = false, compact_history}
      : tensor<?x8x64xf32>, tensor<?x16x2x64xf32>, tensor<?x16x2x32xf32>, tensor<?x8x32xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
      -> tensor<?x8x64xf32>, tensor<?x16x2x64xf32>, tensor<?x16x2x32xf32>
  return %dq : tensor<?x8x64xf32>
}
