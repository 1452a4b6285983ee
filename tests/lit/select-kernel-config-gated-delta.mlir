// rudnn-select-kernel-config on rudnn.gated_delta. chunk_size 0 (recurrence): the smallest registered
// tile {warps, rows_per_thread} whose 4·warps·rows_per_thread holds key_dim. Chunked: 128 threads for
// key_dim <= 64, else 256, 32 state columns per block, tensor cores for f16/bf16 on sm_80+; 16
// columns where only those fit the target's shared memory (sm_86: chunk 64 at key_dim 128 needs
// 125440 bytes at 32 columns, 92672 at 16, against 101376).
// RUN: rudnn-opt %s --rudnn-select-kernel-config | FileCheck %s
// RUN: rudnn-opt %s --rudnn-select-kernel-config="arch=sm_75" | FileCheck %s --check-prefix=TURING
// RUN: rudnn-opt %s --rudnn-select-kernel-config="arch=sm_86 max-shared-bytes=101376" | FileCheck %s --check-prefix=SM86

// key_dim 128: the 4x8 tile (holds 128).
// CHECK-LABEL: func.func @recurrent_128
// CHECK: rudnn.gated_delta {{.*}}kernel_config = {rows_per_thread = 8 : i64, warps = 4 : i64}
func.func @recurrent_128(%q: tensor<?x4x1x128xbf16>, %b: tensor<?x4x1xbf16>, %s: tensor<?x4x128x128xf32>)
    -> (tensor<?x4x1x128xbf16>, tensor<?x4x128x128xf32>) {
  %o, %s1 = rudnn.gated_delta %q, %q, %q, %b, %b, %s {query_scale = 0.0883883 : f32, chunk_size = 0 : i64}
      : tensor<?x4x1x128xbf16>, tensor<?x4x1x128xbf16>, tensor<?x4x1x128xbf16>, tensor<?x4x1xbf16>, tensor<?x4x1xbf16>,
        tensor<?x4x128x128xf32> -> tensor<?x4x1x128xbf16>, tensor<?x4x128x128xf32>
  return %o, %s1 : tensor<?x4x1x128xbf16>, tensor<?x4x128x128xf32>
}

// key_dim 64: the 4x4 tile.
// CHECK-LABEL: func.func @recurrent_64
// CHECK: kernel_config = {rows_per_thread = 4 : i64, warps = 4 : i64}
func.func @recurrent_64(%q: tensor<2x4x8x64xf32>, %b: tensor<2x4x8xf32>) -> (tensor<2x4x8x64xf32>, tensor<2x4x64x64xf32>) {
  %o, %s1 = rudnn.gated_delta %q, %q, %q, %b, %b {query_scale = 0.125 : f32, chunk_size = 0 : i64}
      : tensor<2x4x8x64xf32>, tensor<2x4x8x64xf32>, tensor<2x4x8x64xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
        -> tensor<2x4x8x64xf32>, tensor<2x4x64x64xf32>
  return %o, %s1 : tensor<2x4x8x64xf32>, tensor<2x4x64x64xf32>
}

// bf16, key_dim 128: 256 threads on tensor cores; on sm_75 the same tile on plain cores.
// CHECK-LABEL: func.func @chunked_bf16
// CHECK: kernel_config = {columns = 32 : i64, tensor_core = 1 : i64, threads = 256 : i64}
// TURING-LABEL: func.func @chunked_bf16
// TURING: kernel_config = {columns = 32 : i64, tensor_core = 0 : i64, threads = 256 : i64}
// SM86-LABEL: func.func @chunked_bf16
// SM86: kernel_config = {columns = 16 : i64, tensor_core = 1 : i64, threads = 256 : i64}
func.func @chunked_bf16(%q: tensor<?x4x100x128xbf16>, %b: tensor<?x4x100xbf16>) -> (tensor<?x4x100x128xbf16>, tensor<?x4x128x128xf32>) {
  %o, %s = rudnn.gated_delta %q, %q, %q, %b, %b {query_scale = 0.0883883 : f32, chunk_size = 64 : i64}
      : tensor<?x4x100x128xbf16>, tensor<?x4x100x128xbf16>, tensor<?x4x100x128xbf16>, tensor<?x4x100xbf16>,
        tensor<?x4x100xbf16> -> tensor<?x4x100x128xbf16>, tensor<?x4x128x128xf32>
  return %o, %s : tensor<?x4x100x128xbf16>, tensor<?x4x128x128xf32>
}

// f32, key_dim 64: 128 threads, never tensor cores.
// CHECK-LABEL: func.func @chunked_f32
// CHECK: kernel_config = {columns = 32 : i64, tensor_core = 0 : i64, threads = 128 : i64}
// SM86-LABEL: func.func @chunked_f32
// SM86: kernel_config = {columns = 32 : i64, tensor_core = 0 : i64, threads = 128 : i64}
func.func @chunked_f32(%q: tensor<1x2x64x64xf32>, %b: tensor<1x2x64xf32>) -> (tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>) {
  %o, %s = rudnn.gated_delta %q, %q, %q, %b, %b {query_scale = 0.125 : f32, chunk_size = 32 : i64}
      : tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>, tensor<1x2x64xf32>, tensor<1x2x64xf32>
        -> tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>
  return %o, %s : tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>
}
