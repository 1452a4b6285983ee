// Every attention contract line (SPEC §5) the IR can express is rejected by the verifier with the
// message of rudnn::contracts::check_attention / check_strategy_fits; plus result type and kernel_config.
// RUN: rudnn-opt %s -split-input-file -verify-diagnostics

func.func @gqa(%q: tensor<1x6x4x64xf16>, %k: tensor<1x4x8x64xf16>) {
  // expected-error @+1 {{'rudnn.attention' op key: expected kv_heads dividing q_heads (6), got 4 kv_heads}}
  %o = rudnn.attention %q, %k, %k {scale = 1.0 : f32, causal = false, strategy = "fallback"} : tensor<1x6x4x64xf16>, tensor<1x4x8x64xf16>, tensor<1x4x8x64xf16> -> tensor<1x6x4x64xf16>
  return
}

// -----

func.func @mask_dtype(%q: tensor<1x2x4x64xf16>, %k: tensor<1x2x8x64xf16>, %m: tensor<1x2x4x8xf16>) {
  // expected-error @+1 {{mask: expected u8 (boolean, nonzero = excluded), got f16}}
  %o = rudnn.attention %q, %k, %k mask(%m : tensor<1x2x4x8xf16>) {scale = 1.0 : f32, causal = false, strategy = "fallback"} : tensor<1x2x4x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16> -> tensor<1x2x4x64xf16>
  return
}

// -----

func.func @f32_tensor_cores(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x8x64xf32>) {
  // expected-error @+1 {{strategy: expected FlashBlackboxAccelerated: f16 or bf16 with head_dim = value_dim in {64, 96, 128, 256}, got head_dim 64, value_dim 64, f32}}
  %o = rudnn.attention %q, %k, %k {scale = 1.0 : f32, causal = false, strategy = "flash_mma"} : tensor<1x2x4x64xf32>, tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32> -> tensor<1x2x4x64xf32>
  return
}

// -----

func.func @unknown_strategy(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x8x64xf32>) {
  // expected-error @+1 {{strategy: expected "flash_mma", "flash_unit", "fallback" or "autotune", got "fast"}}
  %o = rudnn.attention %q, %k, %k {scale = 1.0 : f32, causal = false, strategy = "fast"} : tensor<1x2x4x64xf32>, tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32> -> tensor<1x2x4x64xf32>
  return
}

// -----

func.func @tile_strategy(%q: tensor<1x2x4x64xf16>, %k: tensor<1x2x8x64xf16>) {
  // expected-error @+1 {{kernel_config: a flash_unit tile for strategy "fallback"}}
  %o = rudnn.attention %q, %k, %k {scale = 1.0 : f32, causal = false, strategy = "fallback", kernel_config = {strategy = 1, block_m = 64, block_n = 32, threads_per_row = 4, max_value_dim = 64}} : tensor<1x2x4x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16> -> tensor<1x2x4x64xf16>
  return
}

// -----

func.func @tile_unregistered(%q: tensor<1x2x4x64xf16>, %k: tensor<1x2x8x64xf16>) {
  // expected-error @+1 {{kernel_config: flash_mma 64x32 is not a registered tile for f16 head_dim 64 value_dim 64}}
  %o = rudnn.attention %q, %k, %k {scale = 1.0 : f32, causal = false, strategy = "autotune", kernel_config = {strategy = 0, block_m = 64, block_n = 32}} : tensor<1x2x4x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16> -> tensor<1x2x4x64xf16>
  return
}

// -----

func.func @wgmma_tile_for_d96(%q: tensor<1x2x4x96xbf16>, %k: tensor<1x2x8x96xbf16>) {
  // expected-error @+1 {{kernel_config: flash_wgmma 128x128 is not a registered tile for bf16 head_dim 96 value_dim 96}}
  %o = rudnn.attention %q, %k, %k {scale = 1.0 : f32, causal = false, strategy = "flash_mma", kernel_config = {strategy = 0, block_m = 128, block_n = 128, wgmma = 1}} : tensor<1x2x4x96xbf16>, tensor<1x2x8x96xbf16>, tensor<1x2x8x96xbf16> -> tensor<1x2x4x96xbf16>
  return
}

// -----

func.func @wgmma_key_not_a_flag(%q: tensor<1x2x4x64xf16>, %k: tensor<1x2x8x64xf16>) {
  // expected-error @+1 {{kernel_config: expected 'strategy' (0 flash_mma, 1 flash_unit, 2 fallback) and its tile keys (flash_mma: wgmma = 1 on a wgmma tile, 0 or absent elsewhere), got {block_m = 128 : i64, block_n = 128 : i64, strategy = 0 : i64, wgmma = 2 : i64}}}
  %o = rudnn.attention %q, %k, %k {scale = 1.0 : f32, causal = false, strategy = "flash_mma", kernel_config = {strategy = 0, block_m = 128, block_n = 128, wgmma = 2}} : tensor<1x2x4x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16> -> tensor<1x2x4x64xf16>
  return
}

// -----

// wgmma = 0 is the key's absent value: the mma.sync tile.
func.func @wgmma_zero_is_mma(%q: tensor<1x2x4x64xf16>, %k: tensor<1x2x8x64xf16>) {
  // expected-error @+1 {{kernel_config: flash_mma 128x128 is not a registered tile for f16 head_dim 64 value_dim 64}}
  %o = rudnn.attention %q, %k, %k {scale = 1.0 : f32, causal = false, strategy = "flash_mma", kernel_config = {strategy = 0, block_m = 128, block_n = 128, wgmma = 0}} : tensor<1x2x4x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16> -> tensor<1x2x4x64xf16>
  return
}
