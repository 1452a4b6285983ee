// rudnn-select-kernel-config on rudnn.combine (one block per token): the widest legal vector for the
// expert rows, then min(256, max(64, next_pow2(ceil(h / vector_width)))) threads.
// RUN: rudnn-opt %s --rudnn-select-kernel-config | FileCheck %s

// bf16 rows of 64: 8-element vectors, 8 vectors → the 64-thread floor.
// CHECK-LABEL: func.func @bf16_64
// CHECK: rudnn.combine {{.*}}kernel_config = {threads = 64 : i64, vector_width = 8 : i64}
func.func @bf16_64(%y: tensor<?x64xbf16>, %s: tensor<?x8xui32>, %w: tensor<?x8xbf16>) -> tensor<?x64xbf16> {
  %out = rudnn.combine %y, %s, %w : tensor<?x64xbf16>, tensor<?x8xui32>, tensor<?x8xbf16> -> tensor<?x64xbf16>
  return %out : tensor<?x64xbf16>
}

// f16 rows of 7168 with f32 weights: 896 vectors → the 256-thread cap.
// CHECK-LABEL: func.func @f16_7168
// CHECK: kernel_config = {threads = 256 : i64, vector_width = 8 : i64}
func.func @f16_7168(%y: tensor<?x7168xf16>, %s: tensor<?x8xui32>, %w: tensor<?x8xf32>) -> tensor<?x7168xf16> {
  %out = rudnn.combine %y, %s, %w : tensor<?x7168xf16>, tensor<?x8xui32>, tensor<?x8xf32> -> tensor<?x7168xf16>
  return %out : tensor<?x7168xf16>
}

// f32 rows of 1022 (even, not divisible by 4): 2-element vectors, 511 vectors → 256 threads.
// CHECK-LABEL: func.func @f32_1022
// CHECK: kernel_config = {threads = 256 : i64, vector_width = 2 : i64}
func.func @f32_1022(%y: tensor<?x1022xf32>, %s: tensor<?x2xui32>, %w: tensor<?x2xf32>) -> tensor<?x1022xf32> {
  %out = rudnn.combine %y, %s, %w : tensor<?x1022xf32>, tensor<?x2xui32>, tensor<?x2xf32> -> tensor<?x1022xf32>
  return %out : tensor<?x1022xf32>
}

// CHECK-LABEL: func.func @forced
// CHECK: kernel_config = {threads = 128 : i64, vector_width = 1 : i64}
func.func @forced(%y: tensor<?x64xbf16>, %s: tensor<?x8xui32>, %w: tensor<?x8xbf16>) -> tensor<?x64xbf16> {
  %out = rudnn.combine %y, %s, %w {kernel_config = {threads = 128, vector_width = 1}}
           : tensor<?x64xbf16>, tensor<?x8xui32>, tensor<?x8xbf16> -> tensor<?x64xbf16>
  return %out : tensor<?x64xbf16>
}
