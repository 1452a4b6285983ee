// rudnn-select-kernel-config on rudnn.swiglu_experts: the strategy on the target (scalar; tensor_core;
// auto = tensor cores where the contract allows them: f16/bf16 on sm_80+), then the smallest registered
// tile whose block_m covers rudnn.rows_per_expert, the largest when none does, the middle tile when
// the load is unknown (no hint).
// Without tensor cores (sm_75) auto falls back to scalar, and strategy tensor_core is the contract's
// error (the other functions, split off, still get their configs).
// RUN: rudnn-opt %s --split-input-file --rudnn-select-kernel-config | FileCheck %s
// RUN: not rudnn-opt %s --split-input-file --rudnn-select-kernel-config="arch=sm_75" 2>&1 | FileCheck %s --check-prefix=TURING
// The diagnostic (stderr) comes before the printed module.
// TURING: error: 'rudnn.swiglu_experts' op strategy: expected a GPU with mma.sync m16n8k16 f16/bf16 (sm_80 or newer), got sm_75

// Four rows per expert (decode): the 16-row tensor-core tile; without tensor cores the 16-row scalar one.
// CHECK-LABEL: func.func @auto_decode
// CHECK: kernel_config = {block_k = 64 : i64, block_m = 16 : i64, block_n = 64 : i64, stages = 3 : i64, tensor_core = 1 : i64, warps_m = 1 : i64, warps_n = 4 : i64}
// TURING-LABEL: func.func @auto_decode
// TURING: kernel_config = {block_k = 16 : i64, block_m = 16 : i64, block_n = 32 : i64, tensor_core = 0 : i64, thread_m = 2 : i64, thread_n = 2 : i64}
func.func @auto_decode(%rows: tensor<?x64xbf16>, %off: tensor<9xui32>, %g: tensor<8x32x64xbf16>, %u: tensor<8x32x64xbf16>,
                       %d: tensor<8x64x32xbf16>) -> tensor<?x64xbf16> {
  %y = rudnn.swiglu_experts %rows, %off, %g, %u, %d {strategy = "auto", rudnn.rows_per_expert = 4 : i64}
      : tensor<?x64xbf16>, tensor<9xui32>, tensor<8x32x64xbf16>, tensor<8x32x64xbf16>, tensor<8x64x32xbf16> -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// f32 takes no tensor cores; no hint: the middle scalar tile.
// CHECK-LABEL: func.func @auto_f32
// CHECK: kernel_config = {block_k = 16 : i64, block_m = 32 : i64, block_n = 64 : i64, tensor_core = 0 : i64, thread_m = 4 : i64, thread_n = 4 : i64}
func.func @auto_f32(%rows: tensor<?x64xf32>, %off: tensor<9xui32>, %g: tensor<8x32x64xf32>, %u: tensor<8x32x64xf32>,
                    %d: tensor<8x64x32xf32>) -> tensor<?x64xf32> {
  %y = rudnn.swiglu_experts %rows, %off, %g, %u, %d {strategy = "auto"}
      : tensor<?x64xf32>, tensor<9xui32>, tensor<8x32x64xf32>, tensor<8x32x64xf32>, tensor<8x64x32xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// A prefill load larger than every tile: the largest tensor-core tile.
// CHECK-LABEL: func.func @tensor_core_prefill
// CHECK: kernel_config = {block_k = 32 : i64, block_m = 128 : i64, block_n = 128 : i64, stages = 3 : i64, tensor_core = 1 : i64, warps_m = 2 : i64, warps_n = 4 : i64}
func.func @tensor_core_prefill(%rows: tensor<?x64xbf16>, %off: tensor<9xui32>, %g: tensor<8x32x64xbf16>,
                               %u: tensor<8x32x64xbf16>, %d: tensor<8x64x32xbf16>) -> tensor<?x64xbf16> {
  %y = rudnn.swiglu_experts %rows, %off, %g, %u, %d {strategy = "tensor_core", rudnn.rows_per_expert = 100000 : i64}
      : tensor<?x64xbf16>, tensor<9xui32>, tensor<8x32x64xbf16>, tensor<8x32x64xbf16>, tensor<8x64x32xbf16> -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// Scalar with 20 rows per expert: the first scalar tile with block_m >= 20 (32).
// CHECK-LABEL: func.func @scalar_20
// CHECK: kernel_config = {block_k = 16 : i64, block_m = 32 : i64, block_n = 64 : i64, tensor_core = 0 : i64, thread_m = 4 : i64, thread_n = 4 : i64}
// TURING-LABEL: func.func @scalar_20
// TURING: kernel_config = {block_k = 16 : i64, block_m = 32 : i64, block_n = 64 : i64, tensor_core = 0 : i64, thread_m = 4 : i64, thread_n = 4 : i64}
func.func @scalar_20(%rows: tensor<?x64xbf16>, %off: tensor<9xui32>, %g: tensor<8x32x64xbf16>, %u: tensor<8x32x64xbf16>,
                     %d: tensor<8x64x32xbf16>) -> tensor<?x64xbf16> {
  %y = rudnn.swiglu_experts %rows, %off, %g, %u, %d {strategy = "scalar", rudnn.rows_per_expert = 20 : i64}
      : tensor<?x64xbf16>, tensor<9xui32>, tensor<8x32x64xbf16>, tensor<8x32x64xbf16>, tensor<8x64x32xbf16> -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
