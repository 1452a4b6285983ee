// rudnn.attention on Hopper's warpgroup MMA (AttentionConfig.cpp: flash_mma's wgmma tiles, 128x128
// for D = 64 and 128, 128x32 for D = 256, FlashWgmmaPolicy): a config naming one is kept where the
// target has wgmma (sm_90a with RUDNN_WGMMA=1, or the host emulation device reporting sm_90a) and
// refused elsewhere with the requirement, as every family's wgmma configs
// (select-kernel-config-wgmma.mlir). Under the opt-in the heuristic of flash_mma and of autotune
// takes the wgmma tile, unless the panels are known to hold 64 rows or fewer (static decode with a
// small group, or the rudnn.short_panels hint) or the tile does not fit the target's shared memory.
// Without the opt-in, the mma.sync tiles (select-kernel-config-attention.mlir), the host emulation
// device included.
// RUN: env RUDNN_WGMMA=1 rudnn-opt %s --rudnn-select-kernel-config="arch=sm_90a" | FileCheck %s --check-prefix=OPTIN
// RUN: rudnn-opt %s --rudnn-select-kernel-config="arch=sm_90a host-emulation=1" | FileCheck %s --check-prefix=HOST
// RUN: not rudnn-opt %s --rudnn-select-kernel-config="arch=sm_90a" 2>&1 | FileCheck %s --check-prefix=REFUSED
// RUN: env RUDNN_WGMMA=1 not rudnn-opt %s --rudnn-select-kernel-config="arch=sm_80" 2>&1 | FileCheck %s --check-prefix=REFUSED80
// Within 101376 bytes of shared memory (sm_86-sized) the wgmma tiles of D = 128 (164864 bytes) and
// D = 256 (132096) do not fit and the mma.sync tiles serve; D = 64's (82944) does.
// RUN: env RUDNN_WGMMA=1 rudnn-opt %s --rudnn-select-kernel-config="arch=sm_90a max-shared-bytes=101376" | FileCheck %s --check-prefix=SMALL

// OPTIN-LABEL: func.func @attention
// OPTIN: kernel_config = {block_m = 128 : i64, block_n = 128 : i64, strategy = 0 : i64, wgmma = 1 : i64}
// OPTIN: kernel_config = {block_m = 128 : i64, block_n = 128 : i64, strategy = 0 : i64, wgmma = 1 : i64}
// OPTIN: kernel_config = {block_m = 128 : i64, block_n = 128 : i64, strategy = 0 : i64, wgmma = 1 : i64}
// OPTIN: kernel_config = {block_m = 64 : i64, block_n = 64 : i64, strategy = 0 : i64}
// OPTIN: kernel_config = {block_m = 128 : i64, block_n = 32 : i64, strategy = 0 : i64, wgmma = 1 : i64}
// OPTIN: kernel_config = {block_m = 64 : i64, block_n = 64 : i64, strategy = 0 : i64}
// SMALL-LABEL: func.func @attention
// SMALL: kernel_config = {block_m = 128 : i64, block_n = 128 : i64, strategy = 0 : i64, wgmma = 1 : i64}
// SMALL: kernel_config = {block_m = 64 : i64, block_n = 64 : i64, strategy = 0 : i64}
// SMALL: kernel_config = {block_m = 128 : i64, block_n = 128 : i64, strategy = 0 : i64, wgmma = 1 : i64}
// SMALL: kernel_config = {block_m = 64 : i64, block_n = 64 : i64, strategy = 0 : i64}
// SMALL: kernel_config = {block_m = 64 : i64, block_n = 32 : i64, strategy = 0 : i64}
// HOST-LABEL: func.func @attention
// HOST: kernel_config = {block_m = 128 : i64, block_n = 128 : i64, strategy = 0 : i64, wgmma = 1 : i64}
// HOST: kernel_config = {block_m = 64 : i64, block_n = 64 : i64, strategy = 0 : i64}
// HOST: kernel_config = {block_m = 128 : i64, block_n = 64 : i64, strategy = 0 : i64}
// HOST: kernel_config = {block_m = 64 : i64, block_n = 64 : i64, strategy = 0 : i64}
// HOST: kernel_config = {block_m = 64 : i64, block_n = 32 : i64, strategy = 0 : i64}
// HOST: kernel_config = {block_m = 64 : i64, block_n = 64 : i64, strategy = 0 : i64}
// REFUSED: error: 'rudnn.attention' op kernel_config: expected a GPU with wgmma (sm_90a: H100, H200) and RUDNN_WGMMA=1 (opt-in until a GPU run verifies the wgmma kernels) for {{.*}}wgmma = 1 : i64}, got target sm_90a
// REFUSED80: error: 'rudnn.attention' op kernel_config: expected a GPU with wgmma {{.*}}wgmma = 1 : i64}, got target sm_80
func.func @attention(%q: tensor<?x32x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>,
                     %q64: tensor<?x32x?x64xf16>, %k64: tensor<?x8x?x64xf16>,
                     %qd: tensor<4x16x1x128xbf16>, %kd: tensor<4x8x?x128xbf16>,
                     %q256: tensor<?x8x?x256xbf16>, %k256: tensor<?x8x?x256xbf16>)
    -> (tensor<?x32x?x128xbf16>, tensor<?x32x?x128xbf16>, tensor<?x32x?x64xf16>, tensor<4x16x1x128xbf16>, tensor<?x8x?x256xbf16>,
        tensor<?x32x?x128xbf16>) {
  %given = rudnn.attention %q, %k, %v {scale = 0.125 : f32, causal = true, strategy = "flash_mma",
         kernel_config = {strategy = 0, block_m = 128, block_n = 128, wgmma = 1}}
      : tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x32x?x128xbf16>
  %flash = rudnn.attention %q, %k, %v {scale = 0.125 : f32, causal = true, strategy = "flash_mma"}
      : tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x32x?x128xbf16>
  %auto = rudnn.attention %q64, %k64, %k64 {scale = 0.125 : f32, causal = false, strategy = "autotune"}
      : tensor<?x32x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16> -> tensor<?x32x?x64xf16>
  // Decode, 2 query heads per KV head: panels of 2 rows.
  %decode = rudnn.attention %qd, %kd, %kd {scale = 0.125 : f32, causal = false, strategy = "flash_mma"}
      : tensor<4x16x1x128xbf16>, tensor<4x8x?x128xbf16>, tensor<4x8x?x128xbf16> -> tensor<4x16x1x128xbf16>
  %d256 = rudnn.attention %q256, %k256, %k256 {scale = 0.0625 : f32, causal = true, strategy = "flash_mma"}
      : tensor<?x8x?x256xbf16>, tensor<?x8x?x256xbf16>, tensor<?x8x?x256xbf16> -> tensor<?x8x?x256xbf16>
  // The public entry's hint for decode, whose Tq it keeps dynamic: panels of 64 rows or fewer.
  %hinted = rudnn.attention %q, %k, %v {scale = 0.125 : f32, causal = false, strategy = "flash_mma", rudnn.short_panels}
      : tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x32x?x128xbf16>
  return %given, %flash, %auto, %decode, %d256, %hinted
      : tensor<?x32x?x128xbf16>, tensor<?x32x?x128xbf16>, tensor<?x32x?x64xf16>, tensor<4x16x1x128xbf16>, tensor<?x8x?x256xbf16>,
        tensor<?x32x?x128xbf16>
}
