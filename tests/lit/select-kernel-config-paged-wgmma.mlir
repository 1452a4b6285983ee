// rudnn.paged_attention and rudnn.paged_mla on Hopper's warpgroup MMA (PagedAttentionConfig.cpp:
// the tensor-core tile with wgmma = 1. Attention: paged::WgmmaPolicy<D, block_keys>, f16/bf16 at
// D = Dv in {64, 128, 256}, 64 rows, 64-key tiles, 32 at D = 256. MLA: paged::MlaWgmmaPolicy<R, Pr>,
// R in {128, 256, 512} with R + Pr whole 64-column panels, 64 rows, 64-key tiles; DeepSeek's R = 512
// / Pr = 64 is one): a config naming one is kept where the target has wgmma (sm_90a with
// RUDNN_WGMMA=1, or the host emulation device reporting sm_90a) and refused elsewhere with the
// requirement, as every family's wgmma configs (select-kernel-config-wgmma.mlir). Under the opt-in
// the heuristic takes it for every schedule, unsplit and split (the kernel never depends on the
// batch); D = 96 and MLA with R + Pr = 144 keep their mma.sync tiles. Without the opt-in, the
// mma.sync tiles (select-kernel-config-paged-attention.mlir), the host emulation device included.
// RUN: env RUDNN_WGMMA=1 rudnn-opt %s --rudnn-select-kernel-config="arch=sm_90a" | FileCheck %s --check-prefix=OPTIN
// RUN: rudnn-opt %s --rudnn-select-kernel-config="arch=sm_90a host-emulation=1" | FileCheck %s --check-prefix=HOST
// RUN: not rudnn-opt %s --rudnn-select-kernel-config="arch=sm_90a" 2>&1 | FileCheck %s --check-prefix=REFUSED
// RUN: env RUDNN_WGMMA=1 not rudnn-opt %s --rudnn-select-kernel-config="arch=sm_80" 2>&1 | FileCheck %s --check-prefix=REFUSED80

// OPTIN-LABEL: func.func @paged
// OPTIN: kernel_config = {block_keys = 64 : i64, block_rows = 64 : i64, max_value_dim = 128 : i64, row_lanes = 0 : i64, tensor_core = 1 : i64, wgmma = 1 : i64}{{.*}}splits = 1
// OPTIN: kernel_config = {block_keys = 64 : i64, block_rows = 64 : i64, max_value_dim = 128 : i64, row_lanes = 0 : i64, tensor_core = 1 : i64, wgmma = 1 : i64}{{.*}}splits = 1
// OPTIN: kernel_config = {block_keys = 64 : i64, block_rows = 64 : i64, max_value_dim = 128 : i64, row_lanes = 0 : i64, tensor_core = 1 : i64, wgmma = 1 : i64}{{.*}}splits = 8
// OPTIN: kernel_config = {block_keys = 64 : i64, block_rows = 64 : i64, max_value_dim = 64 : i64, row_lanes = 0 : i64, tensor_core = 1 : i64, wgmma = 1 : i64}
// OPTIN: kernel_config = {block_keys = 32 : i64, block_rows = 64 : i64, max_value_dim = 256 : i64, row_lanes = 0 : i64, tensor_core = 1 : i64, wgmma = 1 : i64}
// OPTIN: kernel_config = {block_keys = 64 : i64, block_rows = 64 : i64, max_value_dim = 96 : i64, row_lanes = 0 : i64, tensor_core = 1 : i64}
// OPTIN: rudnn.paged_mla {{.*}}kernel_config = {block_keys = 64 : i64, block_rows = 64 : i64, max_value_dim = 512 : i64, row_lanes = 0 : i64, tensor_core = 1 : i64, wgmma = 1 : i64}
// OPTIN: rudnn.paged_mla {{.*}}kernel_config = {block_keys = 32 : i64, block_rows = 64 : i64, max_value_dim = 128 : i64, row_lanes = 0 : i64, tensor_core = 1 : i64}
// HOST-LABEL: func.func @paged
// HOST: kernel_config = {block_keys = 64 : i64, block_rows = 64 : i64, max_value_dim = 128 : i64, row_lanes = 0 : i64, tensor_core = 1 : i64, wgmma = 1 : i64}{{.*}}splits = 1
// HOST: kernel_config = {block_keys = 64 : i64, block_rows = 64 : i64, max_value_dim = 128 : i64, row_lanes = 0 : i64, tensor_core = 1 : i64}{{.*}}splits = 1
// HOST: kernel_config = {block_keys = 64 : i64, block_rows = 64 : i64, max_value_dim = 128 : i64, row_lanes = 0 : i64, tensor_core = 1 : i64}{{.*}}splits = 8
// HOST: kernel_config = {block_keys = 64 : i64, block_rows = 64 : i64, max_value_dim = 64 : i64, row_lanes = 0 : i64, tensor_core = 1 : i64}
// HOST: kernel_config = {block_keys = 32 : i64, block_rows = 64 : i64, max_value_dim = 256 : i64, row_lanes = 0 : i64, tensor_core = 1 : i64}
// HOST: kernel_config = {block_keys = 64 : i64, block_rows = 64 : i64, max_value_dim = 96 : i64, row_lanes = 0 : i64, tensor_core = 1 : i64}
// HOST: rudnn.paged_mla {{.*}}kernel_config = {block_keys = 32 : i64, block_rows = 64 : i64, max_value_dim = 512 : i64, row_lanes = 0 : i64, tensor_core = 1 : i64}
// REFUSED: error: 'rudnn.paged_attention' op kernel_config: expected a GPU with wgmma (sm_90a: H100, H200) and RUDNN_WGMMA=1 (opt-in until a GPU run verifies the wgmma kernels) for {{.*}}wgmma = 1 : i64}, got target sm_90a
// REFUSED80: error: 'rudnn.paged_attention' op kernel_config: expected a GPU with wgmma {{.*}}wgmma = 1 : i64}, got target sm_80
func.func @paged(%q: tensor<?x32x128xbf16>, %k: tensor<?x16x8x128xbf16>, %table: tensor<?x?xi32>, %lengths: tensor<?xi32>,
                 %seq: tensor<?xi32>, %pos: tensor<?xi32>,
                 %q64: tensor<?x8x64xf16>, %k64: tensor<?x16x2x64xf16>,
                 %q256: tensor<?x8x256xbf16>, %k256: tensor<?x16x2x256xbf16>,
                 %q96: tensor<?x8x96xf16>, %k96: tensor<?x16x2x96xf16>,
                 %ql: tensor<?x16x512xbf16>, %qr: tensor<?x16x64xbf16>, %latent: tensor<?x16x1x512xbf16>,
                 %kr: tensor<?x16x1x64xbf16>,
                 %ql128: tensor<?x16x128xbf16>, %qr16: tensor<?x16x16xbf16>, %latent128: tensor<?x16x1x128xbf16>,
                 %kr16: tensor<?x16x1x16xbf16>) {
  %given = rudnn.paged_attention %q, %k, %k, %table, %lengths, %seq, %pos {scale = 0.125 : f32, causal = true, splits = 1,
         kernel_config = {tensor_core = 1, block_rows = 64, block_keys = 64, row_lanes = 0, max_value_dim = 128, wgmma = 1}}
       : tensor<?x32x128xbf16>, tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  %o = rudnn.paged_attention %q, %k, %k, %table, %lengths, %seq, %pos {scale = 0.125 : f32, causal = true, splits = 1}
       : tensor<?x32x128xbf16>, tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  %s = rudnn.paged_attention %q, %k, %k, %table, %lengths, %seq, %pos {scale = 0.125 : f32, causal = false, splits = 8}
       : tensor<?x32x128xbf16>, tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  %o64 = rudnn.paged_attention %q64, %k64, %k64, %table, %lengths, %seq, %pos {scale = 0.125 : f32, causal = true, splits = 1}
       : tensor<?x8x64xf16>, tensor<?x16x2x64xf16>, tensor<?x16x2x64xf16>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32> -> tensor<?x8x64xf16>
  %o256 = rudnn.paged_attention %q256, %k256, %k256, %table, %lengths, %seq, %pos {scale = 0.0625 : f32, causal = true, splits = 1}
       : tensor<?x8x256xbf16>, tensor<?x16x2x256xbf16>, tensor<?x16x2x256xbf16>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32> -> tensor<?x8x256xbf16>
  %o96 = rudnn.paged_attention %q96, %k96, %k96, %table, %lengths, %seq, %pos {scale = 0.125 : f32, causal = true, splits = 1}
       : tensor<?x8x96xf16>, tensor<?x16x2x96xf16>, tensor<?x16x2x96xf16>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32> -> tensor<?x8x96xf16>
  %mla = rudnn.paged_mla %ql, %qr, %latent, %kr, %table, %lengths, %seq, %pos {scale = 0.0721687824 : f32, causal = true, splits = 1}
       : tensor<?x16x512xbf16>, tensor<?x16x64xbf16>, tensor<?x16x1x512xbf16>, tensor<?x16x1x64xbf16>, tensor<?x?xi32>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  // R + Pr = 144: not whole 64-column panels, so the mma.sync tile.
  %mla144 = rudnn.paged_mla %ql128, %qr16, %latent128, %kr16, %table, %lengths, %seq, %pos {scale = 0.0833 : f32, causal = true, splits = 1}
       : tensor<?x16x128xbf16>, tensor<?x16x16xbf16>, tensor<?x16x1x128xbf16>, tensor<?x16x1x16xbf16>, tensor<?x?xi32>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x128xbf16>
  return
}
