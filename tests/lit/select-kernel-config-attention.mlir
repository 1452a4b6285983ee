// rudnn-select-kernel-config on rudnn.attention: the first registered tile of the op's strategy; for
// "autotune" without a tuned answer the first strategy that fits in the order flash_mma (only where
// the target has mma.sync m16n8k16), flash_unit, fallback. kernel_config strategy: 0 flash_mma,
// 1 flash_unit, 2 fallback.
// RUN: rudnn-opt %s --rudnn-select-kernel-config | FileCheck %s
// RUN: rudnn-opt %s --rudnn-select-kernel-config="arch=sm_75" | FileCheck %s --check-prefix=TURING

// bf16, D = 128: the 64x64 flash_mma tile; on sm_75 flash_unit's 32x32 tile with 8 threads per row.
// CHECK-LABEL: func.func @autotune
// CHECK: rudnn.attention {{.*}}kernel_config = {block_m = 64 : i64, block_n = 64 : i64, strategy = 0 : i64}
// TURING-LABEL: func.func @autotune
// TURING: kernel_config = {block_m = 32 : i64, block_n = 32 : i64, max_value_dim = 128 : i64, strategy = 1 : i64, threads_per_row = 8 : i64}
func.func @autotune(%q: tensor<?x32x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) -> tensor<?x32x?x128xbf16> {
  %o = rudnn.attention %q, %k, %v {scale = 0.125 : f32, causal = true, strategy = "autotune"}
      : tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x32x?x128xbf16>
  return %o : tensor<?x32x?x128xbf16>
}

// flash_unit, f32, D = 64: 64x32 with 4 threads per row, value dims up to 64; the same on any target.
// CHECK-LABEL: func.func @flash_unit
// CHECK: kernel_config = {block_m = 64 : i64, block_n = 32 : i64, max_value_dim = 64 : i64, strategy = 1 : i64, threads_per_row = 4 : i64}
// TURING-LABEL: func.func @flash_unit
// TURING: kernel_config = {block_m = 64 : i64, block_n = 32 : i64, max_value_dim = 64 : i64, strategy = 1 : i64, threads_per_row = 4 : i64}
func.func @flash_unit(%q: tensor<1x4x16x64xf32>, %k: tensor<1x4x16x64xf32>, %v: tensor<1x4x16x64xf32>) -> tensor<1x4x16x64xf32> {
  %o = rudnn.attention %q, %k, %v {scale = 0.125 : f32, causal = false, strategy = "flash_unit"}
      : tensor<1x4x16x64xf32>, tensor<1x4x16x64xf32>, tensor<1x4x16x64xf32> -> tensor<1x4x16x64xf32>
  return %o : tensor<1x4x16x64xf32>
}

// fallback: block_m 64, 32 threads per score row in the softmax.
// CHECK-LABEL: func.func @fallback
// CHECK: kernel_config = {block_m = 64 : i64, softmax_threads = 32 : i64, strategy = 2 : i64}
func.func @fallback(%q: tensor<1x4x16x64xf16>, %k: tensor<1x4x16x64xf16>, %v: tensor<1x4x16x64xf16>) -> tensor<1x4x16x64xf16> {
  %o = rudnn.attention %q, %k, %v {scale = 0.125 : f32, causal = false, strategy = "fallback"}
      : tensor<1x4x16x64xf16>, tensor<1x4x16x64xf16>, tensor<1x4x16x64xf16> -> tensor<1x4x16x64xf16>
  return %o : tensor<1x4x16x64xf16>
}
