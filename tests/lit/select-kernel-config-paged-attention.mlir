// rudnn-select-kernel-config on the paged ops (paged_config::heuristicTile). f16/bf16 with D = Dv in
// {64, 96, 128, 256}, and MLA in f16/bf16 with R a multiple of 128 up to 512 and Pr a multiple of
// 16, where the target has mma.sync m16n8k16 (sm_80 and later): the tensor-core tile, 64 panel
// rows, 64-key tiles (32 at D = 256 and for MLA), row_lanes 0, max_value_dim D (MLA: R).
// Otherwise the plain tile: block_rows covers the GQA group (clamped to 4..16: decode fills the
// block with the heads that share a K/V tile), row_lanes = 128 / block_rows, doubled (≤ 32) until a
// lane holds ≤ 32 value columns, 32-key tiles, max_value_dim the value dim rounded up to a power of
// two (≥ row_lanes); when the shared memory would pass the target's (227 KiB by default;
// `max-shared-bytes`), 16-key tiles of the same rows (≤ 16 lanes), then of 4 rows × 16 lanes, then of 2. The widest dims: select-kernel-config-paged-widest.mlir.
// Splits and causal do not change the tile. rudnn.paged_append gets the empty config.
// RUN: rudnn-opt %s --rudnn-select-kernel-config | FileCheck %s
// RUN: rudnn-opt %s --rudnn-select-kernel-config="arch=sm_80 max-shared-bytes=166912" | FileCheck %s
// RUN: rudnn-opt %s --rudnn-select-kernel-config="arch=sm_75" | FileCheck %s --check-prefix=PLAIN
// sm_86 / sm_89 (99 KiB of shared memory a block): MLA's tensor-core kernels need more, attention's fit.
// RUN: rudnn-opt %s --rudnn-select-kernel-config="arch=sm_86 max-shared-bytes=101376" | FileCheck %s --check-prefix=SM86

// Decode with GQA 32/8 (group 4), D = 128, bf16: the tensor-core 64x64 tile, unsplit and split; plain
// (sm_75), 4 rows × 32 lanes, 4 value columns per lane.
// CHECK-LABEL: func.func @decode_gqa_32_8
// CHECK: rudnn.paged_attention {{.*}}kernel_config = {block_keys = 64 : i64, block_rows = 64 : i64, max_value_dim = 128 : i64, row_lanes = 0 : i64, tensor_core = 1 : i64}{{.*}}splits = 1
// CHECK: rudnn.paged_attention {{.*}}kernel_config = {block_keys = 64 : i64, block_rows = 64 : i64, max_value_dim = 128 : i64, row_lanes = 0 : i64, tensor_core = 1 : i64}{{.*}}splits = 8
// PLAIN-LABEL: func.func @decode_gqa_32_8
// PLAIN: rudnn.paged_attention {{.*}}kernel_config = {block_keys = 32 : i64, block_rows = 4 : i64, max_value_dim = 128 : i64, row_lanes = 32 : i64, tensor_core = 0 : i64}{{.*}}splits = 1
// PLAIN: rudnn.paged_attention {{.*}}kernel_config = {block_keys = 32 : i64, block_rows = 4 : i64, max_value_dim = 128 : i64, row_lanes = 32 : i64, tensor_core = 0 : i64}{{.*}}splits = 8
func.func @decode_gqa_32_8(%q: tensor<?x32x128xbf16>, %k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>,
                           %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>, %pos: tensor<?xi32>)
    -> (tensor<?x32x128xbf16>, tensor<?x32x128xbf16>) {
  %o = rudnn.paged_attention %q, %k, %v, %table, %lengths, %seq, %pos {scale = 0.0883883461 : f32, causal = true, splits = 1}
       : tensor<?x32x128xbf16>, tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  %s = rudnn.paged_attention %q, %k, %v, %table, %lengths, %seq, %pos {scale = 0.0883883461 : f32, causal = false, splits = 8}
       : tensor<?x32x128xbf16>, tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return %o, %s : tensor<?x32x128xbf16>, tensor<?x32x128xbf16>
}

// Group 8 (GQA 64/8), f16: the tensor-core tile; plain, 8 rows × 16 lanes (128 threads), 8 value
// columns per lane.
// CHECK-LABEL: func.func @group_8
// CHECK: kernel_config = {block_keys = 64 : i64, block_rows = 64 : i64, max_value_dim = 128 : i64, row_lanes = 0 : i64, tensor_core = 1 : i64}
// PLAIN-LABEL: func.func @group_8
// PLAIN: kernel_config = {block_keys = 32 : i64, block_rows = 8 : i64, max_value_dim = 128 : i64, row_lanes = 16 : i64, tensor_core = 0 : i64}
func.func @group_8(%q: tensor<?x64x128xf16>, %k: tensor<?x16x8x128xf16>, %v: tensor<?x16x8x128xf16>,
                   %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>, %pos: tensor<?xi32>)
    -> tensor<?x64x128xf16> {
  %o = rudnn.paged_attention %q, %k, %v, %table, %lengths, %seq, %pos {scale = 0.0883883461 : f32, causal = true, splits = 1}
       : tensor<?x64x128xf16>, tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32> -> tensor<?x64x128xf16>
  return %o : tensor<?x64x128xf16>
}

// D = Dv = 256, f16: the tensor-core tile with 32-key tiles; plain, 4 × 32 lanes, 8 columns per lane.
// CHECK-LABEL: func.func @head_dim_256
// CHECK: kernel_config = {block_keys = 32 : i64, block_rows = 64 : i64, max_value_dim = 256 : i64, row_lanes = 0 : i64, tensor_core = 1 : i64}
// PLAIN-LABEL: func.func @head_dim_256
// PLAIN: kernel_config = {block_keys = 32 : i64, block_rows = 4 : i64, max_value_dim = 256 : i64, row_lanes = 32 : i64, tensor_core = 0 : i64}
func.func @head_dim_256(%q: tensor<?x8x256xf16>, %k: tensor<?x16x2x256xf16>, %v: tensor<?x16x2x256xf16>,
                        %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>, %pos: tensor<?xi32>)
    -> tensor<?x8x256xf16> {
  %o = rudnn.paged_attention %q, %k, %v, %table, %lengths, %seq, %pos {scale = 0.0625 : f32, causal = true, splits = 1}
       : tensor<?x8x256xf16>, tensor<?x16x2x256xf16>, tensor<?x16x2x256xf16>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32> -> tensor<?x8x256xf16>
  return %o : tensor<?x8x256xf16>
}

// G = 1 prefill (MHA 16/16), f32 (no tensor cores): the clamp's 4 rows × 32 lanes on every target.
// CHECK-LABEL: func.func @prefill_group_1
// CHECK: kernel_config = {block_keys = 32 : i64, block_rows = 4 : i64, max_value_dim = 128 : i64, row_lanes = 32 : i64, tensor_core = 0 : i64}
// PLAIN-LABEL: func.func @prefill_group_1
// PLAIN: kernel_config = {block_keys = 32 : i64, block_rows = 4 : i64, max_value_dim = 128 : i64, row_lanes = 32 : i64, tensor_core = 0 : i64}
func.func @prefill_group_1(%q: tensor<?x16x128xf32>, %k: tensor<?x64x16x128xf32>, %v: tensor<?x64x16x128xf32>,
                           %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>, %pos: tensor<?xi32>)
    -> tensor<?x16x128xf32> {
  %o = rudnn.paged_attention %q, %k, %v, %table, %lengths, %seq, %pos {scale = 0.0883883461 : f32, causal = true, splits = 1}
       : tensor<?x16x128xf32>, tensor<?x64x16x128xf32>, tensor<?x64x16x128xf32>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32> -> tensor<?x16x128xf32>
  return %o : tensor<?x16x128xf32>
}

// Group 32 (MQA 32/1) is clamped to 16 rows × 8 lanes; D = 64 ≠ Dv = 48 (bf16, but no tensor-core
// tile: D ≠ Dv): max_value_dim 64.
// CHECK-LABEL: func.func @mqa_value_dim_48
// CHECK: kernel_config = {block_keys = 32 : i64, block_rows = 16 : i64, max_value_dim = 64 : i64, row_lanes = 8 : i64, tensor_core = 0 : i64}
// PLAIN-LABEL: func.func @mqa_value_dim_48
// PLAIN: kernel_config = {block_keys = 32 : i64, block_rows = 16 : i64, max_value_dim = 64 : i64, row_lanes = 8 : i64, tensor_core = 0 : i64}
func.func @mqa_value_dim_48(%q: tensor<?x32x64xbf16>, %k: tensor<?x16x1x64xbf16>, %v: tensor<?x16x1x48xbf16>,
                            %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>, %pos: tensor<?xi32>)
    -> tensor<?x32x48xbf16> {
  %o = rudnn.paged_attention %q, %k, %v, %table, %lengths, %seq, %pos {scale = 0.125 : f32, causal = true, splits = 1}
       : tensor<?x32x64xbf16>, tensor<?x16x1x64xbf16>, tensor<?x16x1x48xbf16>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32> -> tensor<?x32x48xbf16>
  return %o : tensor<?x32x48xbf16>
}

// MLA R = 512, P = 64, H = 16 (group 16): the tensor-core MLA tile (64 panel rows, 32-key tiles,
// max_value_dim R); plain (sm_75), 16 rows; 8 lanes would hold 64 columns, so 16 lanes. sm_86: the
// tensor-core tile needs 152 KiB and 16 rows of 32 keys 111 KiB, so 16 rows of 16 keys (74 KiB).
// CHECK-LABEL: func.func @mla_h16
// CHECK: rudnn.paged_mla {{.*}}kernel_config = {block_keys = 32 : i64, block_rows = 64 : i64, max_value_dim = 512 : i64, row_lanes = 0 : i64, tensor_core = 1 : i64}
// PLAIN-LABEL: func.func @mla_h16
// PLAIN: rudnn.paged_mla {{.*}}kernel_config = {block_keys = 32 : i64, block_rows = 16 : i64, max_value_dim = 512 : i64, row_lanes = 16 : i64, tensor_core = 0 : i64}
// SM86-LABEL: func.func @mla_h16
// SM86: rudnn.paged_mla {{.*}}kernel_config = {block_keys = 16 : i64, block_rows = 16 : i64, max_value_dim = 512 : i64, row_lanes = 16 : i64, tensor_core = 0 : i64}
func.func @mla_h16(%q: tensor<?x16x512xbf16>, %qp: tensor<?x16x64xbf16>, %latent: tensor<?x64x1x512xbf16>,
                   %kp: tensor<?x64x1x64xbf16>, %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>,
                   %pos: tensor<?xi32>) -> tensor<?x16x512xbf16> {
  %o = rudnn.paged_mla %q, %qp, %latent, %kp, %table, %lengths, %seq, %pos {scale = 0.0721687824 : f32, causal = true, splits = 1}
       : tensor<?x16x512xbf16>, tensor<?x16x64xbf16>, tensor<?x64x1x512xbf16>, tensor<?x64x1x64xbf16>, tensor<?x?xi32>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  return %o : tensor<?x16x512xbf16>
}

// MLA H = 128: the same tensor-core tile (two 64-head chunks per query row); plain, the group
// clamps to 16 rows, the same tile.
// CHECK-LABEL: func.func @mla_h128
// CHECK: rudnn.paged_mla {{.*}}kernel_config = {block_keys = 32 : i64, block_rows = 64 : i64, max_value_dim = 512 : i64, row_lanes = 0 : i64, tensor_core = 1 : i64}
// PLAIN-LABEL: func.func @mla_h128
// PLAIN: rudnn.paged_mla {{.*}}kernel_config = {block_keys = 32 : i64, block_rows = 16 : i64, max_value_dim = 512 : i64, row_lanes = 16 : i64, tensor_core = 0 : i64}
func.func @mla_h128(%q: tensor<?x128x512xbf16>, %qp: tensor<?x128x64xbf16>, %latent: tensor<?x64x1x512xbf16>,
                    %kp: tensor<?x64x1x64xbf16>, %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>,
                    %pos: tensor<?xi32>) -> tensor<?x128x512xbf16> {
  %o = rudnn.paged_mla %q, %qp, %latent, %kp, %table, %lengths, %seq, %pos {scale = 0.0721687824 : f32, causal = true, splits = 4}
       : tensor<?x128x512xbf16>, tensor<?x128x64xbf16>, tensor<?x64x1x512xbf16>, tensor<?x64x1x64xbf16>, tensor<?x?xi32>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x128x512xbf16>
  return %o : tensor<?x128x512xbf16>
}

// MLA R = 512 with Pr = 128: the tensor-core tile would need 167680 bytes of shared memory, past
// sm_80's 163 KiB, so the plain tile serves it (16 rows × 16 lanes).
// CHECK-LABEL: func.func @mla_rope_128
// CHECK: rudnn.paged_mla {{.*}}kernel_config = {{{.*}}tensor_core = 0 : i64}
// PLAIN-LABEL: func.func @mla_rope_128
// PLAIN: rudnn.paged_mla {{.*}}kernel_config = {{{.*}}tensor_core = 0 : i64}
func.func @mla_rope_128(%q: tensor<?x16x512xbf16>, %qp: tensor<?x16x128xbf16>, %latent: tensor<?x64x1x512xbf16>,
                        %kp: tensor<?x64x1x128xbf16>, %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>,
                        %pos: tensor<?xi32>) -> tensor<?x16x512xbf16> {
  %o = rudnn.paged_mla %q, %qp, %latent, %kp, %table, %lengths, %seq, %pos {scale = 0.0721687824 : f32, causal = true, splits = 1}
       : tensor<?x16x512xbf16>, tensor<?x16x128xbf16>, tensor<?x64x1x512xbf16>, tensor<?x64x1x128xbf16>, tensor<?x?xi32>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  return %o : tensor<?x16x512xbf16>
}

// A kernel_config already there is kept; the append gets {}.
// CHECK-LABEL: func.func @kept_and_append
// CHECK: rudnn.paged_attention {{.*}}kernel_config = {block_keys = 64 : i64, block_rows = 8 : i64, max_value_dim = 128 : i64, row_lanes = 16 : i64, tensor_core = 0 : i64}
// CHECK: rudnn.paged_append {{.*}}{kernel_config = {}}
// PLAIN-LABEL: func.func @kept_and_append
// PLAIN: rudnn.paged_attention {{.*}}kernel_config = {block_keys = 64 : i64, block_rows = 8 : i64, max_value_dim = 128 : i64, row_lanes = 16 : i64, tensor_core = 0 : i64}
// PLAIN: rudnn.paged_append {{.*}}{kernel_config = {}}
func.func @kept_and_append(%q: tensor<?x32x128xbf16>, %k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>,
                           %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>, %pos: tensor<?xi32>,
                           %nk: tensor<?x8x128xbf16>)
    -> (tensor<?x32x128xbf16>, tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16>) {
  %o = rudnn.paged_attention %q, %k, %v, %table, %lengths, %seq, %pos {scale = 0.0883883461 : f32, causal = true, splits = 1,
         kernel_config = {tensor_core = 0, block_rows = 8, block_keys = 64, row_lanes = 16, max_value_dim = 128}}
       : tensor<?x32x128xbf16>, tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  %kc, %vc = rudnn.paged_append %nk, %nk, %k, %v, %table, %lengths, %seq, %pos
             : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16>,
               tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16>
  return %o, %kc, %vc : tensor<?x32x128xbf16>, tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16>
}

// The backward: {warps = 4, tensor_core = 1} for attention in f16/bf16 with D = Dv in {64, 96, 128}
// where the target has mma.sync m16n8k16, else {warps = 4, tensor_core = 0}. MLA below.
// CHECK-LABEL: func.func @backward
// CHECK: rudnn.paged_attention_backward {{.*}}kernel_config = {tensor_core = 1 : i64, warps = 4 : i64}
// CHECK: rudnn.paged_attention_backward {{.*}}kernel_config = {tensor_core = 0 : i64, warps = 4 : i64}
// PLAIN-LABEL: func.func @backward
// PLAIN: rudnn.paged_attention_backward {{.*}}kernel_config = {tensor_core = 0 : i64, warps = 4 : i64}
// PLAIN: rudnn.paged_attention_backward {{.*}}kernel_config = {tensor_core = 0 : i64, warps = 4 : i64}
// SM86-LABEL: func.func @backward
// SM86: rudnn.paged_attention_backward {{.*}}kernel_config = {tensor_core = 1 : i64, warps = 4 : i64}
func.func @backward(%q: tensor<?x8x128xbf16>, %k: tensor<?x16x2x128xbf16>, %v: tensor<?x16x2x128xbf16>,
                    %v2: tensor<?x16x2x64xbf16>, %go2: tensor<?x8x64xbf16>,
                    %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>)
    -> (tensor<?x8x128xbf16>, tensor<?x8x128xbf16>) {
  %dq, %dk, %dv = rudnn.paged_attention_backward %q, %k, %v, %q, %t, %l, %s, %p {scale = 0.125 : f32, causal = true}
      : tensor<?x8x128xbf16>, tensor<?x16x2x128xbf16>, tensor<?x16x2x128xbf16>, tensor<?x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
      -> tensor<?x8x128xbf16>, tensor<?x16x2x128xbf16>, tensor<?x16x2x128xbf16>
  %dq2, %dk2, %dv2 = rudnn.paged_attention_backward %q, %k, %v2, %go2, %t, %l, %s, %p {scale = 0.125 : f32, causal = true}
      : tensor<?x8x128xbf16>, tensor<?x16x2x128xbf16>, tensor<?x16x2x64xbf16>, tensor<?x8x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
      -> tensor<?x8x128xbf16>, tensor<?x16x2x128xbf16>, tensor<?x16x2x64xbf16>
  return %dq, %dq2 : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>
}

// The MLA backward: {warps = 4, tensor_core = 1} in f16/bf16 where paged_mla_backward_mma serves
// (R = 512 / Pr = 64), plain at R = 512 / Pr = 96 (its shared memory passes sm_80's) and without
// mma.sync.
// CHECK-LABEL: func.func @mla_backward
// CHECK: rudnn.paged_mla_backward {{.*}}kernel_config = {tensor_core = 1 : i64, warps = 4 : i64}
// CHECK: rudnn.paged_mla_backward {{.*}}kernel_config = {tensor_core = 0 : i64, warps = 4 : i64}
// PLAIN-LABEL: func.func @mla_backward
// PLAIN: rudnn.paged_mla_backward {{.*}}kernel_config = {tensor_core = 0 : i64, warps = 4 : i64}
// PLAIN: rudnn.paged_mla_backward {{.*}}kernel_config = {tensor_core = 0 : i64, warps = 4 : i64}
// SM86-LABEL: func.func @mla_backward
// SM86: rudnn.paged_mla_backward {{.*}}kernel_config = {tensor_core = 0 : i64, warps = 4 : i64}
// SM86: rudnn.paged_mla_backward {{.*}}kernel_config = {tensor_core = 0 : i64, warps = 4 : i64}
func.func @mla_backward(%q: tensor<?x16x512xf16>, %qp: tensor<?x16x64xf16>, %c: tensor<32x64x1x512xf16>, %kp: tensor<32x64x1x64xf16>,
                        %qp2: tensor<?x16x96xf16>, %kp2: tensor<32x64x1x96xf16>,
                        %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>)
    -> (tensor<?x16x512xf16>, tensor<?x16x512xf16>) {
  %a, %b, %cc, %d = rudnn.paged_mla_backward %q, %qp, %c, %kp, %q, %t, %l, %s, %p {scale = 0.0416666679 : f32, causal = false}
      : tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>, tensor<?x16x512xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
      -> tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>
  %a2, %b2, %cc2, %d2 = rudnn.paged_mla_backward %q, %qp2, %c, %kp2, %q, %t, %l, %s, %p {scale = 0.0416666679 : f32, causal = false}
      : tensor<?x16x512xf16>, tensor<?x16x96xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x96xf16>, tensor<?x16x512xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
      -> tensor<?x16x512xf16>, tensor<?x16x96xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x96xf16>
  return %a, %a2 : tensor<?x16x512xf16>, tensor<?x16x512xf16>
}

// GQA 16/1 with D = Dv = 512, f32: 16 rows × 16 lanes of 32-key tiles need 163 KiB (sm_80 and sm_90
// hold it); sm_86 narrows to 16-key tiles of the same 16 rows (98 KiB).
// CHECK-LABEL: func.func @wide_gqa_16
// CHECK: rudnn.paged_attention {{.*}}kernel_config = {block_keys = 32 : i64, block_rows = 16 : i64, max_value_dim = 512 : i64, row_lanes = 16 : i64, tensor_core = 0 : i64}
// SM86-LABEL: func.func @wide_gqa_16
// SM86: rudnn.paged_attention {{.*}}kernel_config = {block_keys = 16 : i64, block_rows = 16 : i64, max_value_dim = 512 : i64, row_lanes = 16 : i64, tensor_core = 0 : i64}
func.func @wide_gqa_16(%q: tensor<?x16x512xf32>, %k: tensor<?x16x1x512xf32>, %v: tensor<?x16x1x512xf32>,
                       %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>, %pos: tensor<?xi32>)
    -> tensor<?x16x512xf32> {
  %o = rudnn.paged_attention %q, %k, %v, %table, %lengths, %seq, %pos {scale = 0.0441941738 : f32, causal = true, splits = 1}
       : tensor<?x16x512xf32>, tensor<?x16x1x512xf32>, tensor<?x16x1x512xf32>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xf32>
  return %o : tensor<?x16x512xf32>
}
