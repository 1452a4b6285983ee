// rudnn-select-kernel-config: vector_width = widest legal vector dividing H (1 when H is dynamic or
// the op is rudnn.unaligned); threads_per_row = min(max, max(32, next_pow2(ceil(H / (4 * vw)))));
// rows_per_block = 4 for one-warp rows. A config already attached is kept.
// RUN: rudnn-opt %s --rudnn-select-kernel-config | FileCheck %s
// RUN: rudnn-opt %s --rudnn-select-kernel-config="max-threads-per-block=256" | FileCheck %s --check-prefix=LIMIT
// RUN: rudnn-opt %s --rudnn-select-kernel-config --rudnn-lower-to-launch | FileCheck %s --check-prefix=LOWER
// LOWER-NOT: rudnn.layer_norm
// LOWER: rudnn.launch @rudnn_layer_norm_bf16_t128_r1_v8(
// LOWER: rudnn.launch @rudnn_rms_norm_f32_t32_r4_v4(

// CHECK-LABEL: func.func @bf16_4096
// 16-byte vectors of bf16 = 8 elements; 4096 / 32 = 128 threads.
// CHECK: rudnn.layer_norm {{.*}}kernel_config = {rows_per_block = 1 : i64, threads_per_row = 128 : i64, vector_width = 8 : i64}
// LIMIT-LABEL: func.func @bf16_4096
// LIMIT: kernel_config = {rows_per_block = 1 : i64, threads_per_row = 128 : i64, vector_width = 8 : i64}
func.func @bf16_4096(%x: tensor<?x4096xbf16>, %g: tensor<4096xf32>, %b: tensor<4096xf32>) -> tensor<?x4096xbf16> {
  %0 = rudnn.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32} : tensor<?x4096xbf16>, tensor<4096xf32>, tensor<4096xf32>
  return %0 : tensor<?x4096xbf16>
}

// CHECK-LABEL: func.func @f32_small
// 16-byte vectors of f32 = 4 elements; 64 / 16 = 4 threads → at least a warp, and 4 rows per block.
// CHECK: kernel_config = {rows_per_block = 4 : i64, threads_per_row = 32 : i64, vector_width = 4 : i64}
func.func @f32_small(%x: tensor<?x64xf32>, %g: tensor<64xf32>) -> tensor<?x64xf32> {
  %0 = rudnn.rms_norm %x, %g {epsilon = 1.0e-05 : f32} : tensor<?x64xf32>, tensor<64xf32>
  return %0 : tensor<?x64xf32>
}

// CHECK-LABEL: func.func @f16_odd_h
// H = 4098 is only divisible by 2: 4-byte vectors; ceil(4098 / 8) = 513 → 1024 threads.
// CHECK: kernel_config = {rows_per_block = 1 : i64, threads_per_row = 1024 : i64, vector_width = 2 : i64}
// LIMIT-LABEL: func.func @f16_odd_h
// LIMIT: kernel_config = {rows_per_block = 1 : i64, threads_per_row = 256 : i64, vector_width = 2 : i64}
func.func @f16_odd_h(%x: tensor<?x4098xf16>) -> tensor<?x4098xf16> {
  %0 = rudnn.softmax_last_axis %x : tensor<?x4098xf16>
  return %0 : tensor<?x4098xf16>
}

// CHECK-LABEL: func.func @prime_h
// CHECK: kernel_config = {rows_per_block = 1 : i64, threads_per_row = 256 : i64, vector_width = 1 : i64}
func.func @prime_h(%x: tensor<?x1021xf32>) -> tensor<?x1021xf32> {
  %0 = rudnn.softmax_last_axis %x : tensor<?x1021xf32>
  return %0 : tensor<?x1021xf32>
}

// CHECK-LABEL: func.func @unaligned
// CHECK: kernel_config = {rows_per_block = 1 : i64, threads_per_row = 1024 : i64, vector_width = 1 : i64}, rudnn.unaligned
func.func @unaligned(%x: tensor<?x4096xbf16>, %g: tensor<4096xf32>) -> tensor<?x4096xbf16> {
  %0 = rudnn.rms_norm %x, %g {epsilon = 1.0e-05 : f32, rudnn.unaligned} : tensor<?x4096xbf16>, tensor<4096xf32>
  return %0 : tensor<?x4096xbf16>
}

// CHECK-LABEL: func.func @dynamic_h
// CHECK: kernel_config = {rows_per_block = 1 : i64, threads_per_row = 256 : i64, vector_width = 1 : i64}
func.func @dynamic_h(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = rudnn.softmax_last_axis %x : tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// CHECK-LABEL: func.func @forced
// CHECK: kernel_config = {rows_per_block = 2 : i64, threads_per_row = 64 : i64, vector_width = 2 : i64}
func.func @forced(%x: tensor<?x4096xbf16>) -> tensor<?x4096xbf16> {
  %0 = rudnn.softmax_last_axis %x {kernel_config = {threads_per_row = 64, rows_per_block = 2, vector_width = 2}} : tensor<?x4096xbf16>
  return %0 : tensor<?x4096xbf16>
}
