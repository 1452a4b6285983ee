// rudnn-lower-to-launch on rudnn.swiglu_experts: two launches. gate/up (fused, SwiGLU applied) writes
// an intermediate [rows, inter] that no one returns (a temporary: result_elements sizes it), then
// down reads it. grid = (ceil(N / block_n), ceil(rows / block_m)); shared memory by the tile's policy.
// RUN: rudnn-opt %s --rudnn-lower-to-launch | FileCheck %s

// CHECK-LABEL: func.func @tensor_core
// CHECK-SAME: (%[[R:.*]]: tensor<?x64xbf16>, %[[O:.*]]: tensor<9xui32>, %[[G:.*]]: tensor<8x32x64xbf16>, %[[U:.*]]: tensor<8x32x64xbf16>, %[[D:.*]]: tensor<8x64x32xbf16>)
// CHECK: %[[ACT:.*]] = rudnn.launch @rudnn_swiglu_gate_up_mma_bf16_16x64x64_w1x4_s3(%[[R]], %[[O]], %[[G]], %[[U]])
// CHECK-SAME: header "rudnn/moe/experts_mma.cuh" function "rudnn::moe::swiglu_gate_up_mma"
// CHECK-SAME: args ["rudnn::bf16", "rudnn::moe::MmaGemmPolicy<16, 64, 64, 1, 4, 3>"]
// CHECK-SAME: grid [#rudnn.size<32 ceildiv 64>, #rudnn.size<rows(0) ceildiv 16>, #rudnn.size<1>] block [128, 1, 1] shared 62208
// CHECK-SAME: #rudnn.param<"act" : "rudnn::bf16*" = buffer(4)>, #rudnn.param<"n_rows" : "long long" = size(rows(0))>,
// CHECK-SAME: #rudnn.param<"experts" : "long long" = size(8)>, #rudnn.param<"hidden" : "long long" = size(64)>, #rudnn.param<"inter" : "long long" = size(32)>]
// CHECK-SAME: {origin = "rudnn.swiglu_experts", result_elements = [#rudnn.size<rows(0) * 32>]} : {{.*}} -> tensor<?x32xbf16>
// CHECK: %[[Y:.*]] = rudnn.launch @rudnn_expert_down_mma_bf16_16x64x64_w1x4_s3(%[[ACT]], %[[O]], %[[D]])
// CHECK-SAME: function "rudnn::moe::expert_down_mma" args ["rudnn::bf16", "rudnn::moe::MmaGemmPolicy<16, 64, 64, 1, 4, 3>"]
// CHECK-SAME: grid [#rudnn.size<64 ceildiv 64>, #rudnn.size<rows(0) ceildiv 16>, #rudnn.size<1>] block [128, 1, 1] shared 34560
// CHECK-SAME: #rudnn.param<"out" : "rudnn::bf16*" = buffer(3)>
// CHECK: return %[[Y]]
func.func @tensor_core(%rows: tensor<?x64xbf16>, %off: tensor<9xui32>, %g: tensor<8x32x64xbf16>, %u: tensor<8x32x64xbf16>,
                       %d: tensor<8x64x32xbf16>) -> tensor<?x64xbf16> {
  %y = rudnn.swiglu_experts %rows, %off, %g, %u, %d {strategy = "tensor_core",
         kernel_config = {tensor_core = 1, block_m = 16, block_n = 64, block_k = 64, warps_m = 1, warps_n = 4, stages = 3}}
      : tensor<?x64xbf16>, tensor<9xui32>, tensor<8x32x64xbf16>, tensor<8x32x64xbf16>, tensor<8x64x32xbf16> -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// Scalar: ((block_m + 4) + 2 × (block_n + 4)) × block_k × 4 = 11008 bytes for gate/up.
// CHECK-LABEL: func.func @scalar
// CHECK: rudnn.launch @rudnn_swiglu_gate_up_scalar_f32_32x64x16_t4x4(
// CHECK-SAME: header "rudnn/moe/experts_scalar.cuh" function "rudnn::moe::swiglu_gate_up_scalar"
// CHECK-SAME: args ["float", "rudnn::moe::ScalarGemmPolicy<32, 64, 16, 4, 4>"]
// CHECK-SAME: grid [#rudnn.size<32 ceildiv 64>, #rudnn.size<rows(0) ceildiv 32>, #rudnn.size<1>] block [128, 1, 1] shared 11008
// CHECK: rudnn.launch @rudnn_expert_down_scalar_f32_32x64x16_t4x4(
// CHECK-SAME: function "rudnn::moe::expert_down_scalar"
// CHECK-SAME: block [128, 1, 1] shared 6656
func.func @scalar(%rows: tensor<?x64xf32>, %off: tensor<9xui32>, %g: tensor<8x32x64xf32>, %u: tensor<8x32x64xf32>,
                  %d: tensor<8x64x32xf32>) -> tensor<?x64xf32> {
  %y = rudnn.swiglu_experts %rows, %off, %g, %u, %d {strategy = "scalar",
         kernel_config = {tensor_core = 0, block_m = 32, block_n = 64, block_k = 16, thread_m = 4, thread_n = 4}}
      : tensor<?x64xf32>, tensor<9xui32>, tensor<8x32x64xf32>, tensor<8x32x64xf32>, tensor<8x64x32xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// Hopper's warpgroup MMA (wgmma = 1): WgmmaExpertsPolicy, one warpgroup of 128 threads per 64 rows;
// shared memory shared_memory::experts_wgmma = stages × (block_m + operands × block_n) × block_k × 2
// + 1024: 4 × (64 + 256) × 64 × 2 + 1024 = 164864 for gate/up, 4 × (64 + 128) × 64 × 2 + 1024 = 99328
// for down.
// CHECK-LABEL: func.func @wgmma
// CHECK: rudnn.launch @rudnn_swiglu_gate_up_mma_bf16_wgmma_64x128x64_s4(
// CHECK-SAME: header "rudnn/moe/experts_mma.cuh" function "rudnn::moe::swiglu_gate_up_mma"
// CHECK-SAME: args ["rudnn::bf16", "rudnn::moe::WgmmaExpertsPolicy<64, 128, 64, 4>"]
// CHECK-SAME: grid [#rudnn.size<32 ceildiv 128>, #rudnn.size<rows(0) ceildiv 64>, #rudnn.size<1>] block [128, 1, 1] shared 164864
// CHECK: rudnn.launch @rudnn_expert_down_mma_bf16_wgmma_64x128x64_s4(
// CHECK-SAME: function "rudnn::moe::expert_down_mma" args ["rudnn::bf16", "rudnn::moe::WgmmaExpertsPolicy<64, 128, 64, 4>"]
// CHECK-SAME: grid [#rudnn.size<64 ceildiv 128>, #rudnn.size<rows(0) ceildiv 64>, #rudnn.size<1>] block [128, 1, 1] shared 99328
func.func @wgmma(%rows: tensor<?x64xbf16>, %off: tensor<9xui32>, %g: tensor<8x32x64xbf16>, %u: tensor<8x32x64xbf16>,
                 %d: tensor<8x64x32xbf16>) -> tensor<?x64xbf16> {
  %y = rudnn.swiglu_experts %rows, %off, %g, %u, %d {strategy = "tensor_core",
         kernel_config = {tensor_core = 1, block_m = 64, block_n = 128, block_k = 64, warps_m = 4, warps_n = 1, stages = 4, wgmma = 1}}
      : tensor<?x64xbf16>, tensor<9xui32>, tensor<8x32x64xbf16>, tensor<8x32x64xbf16>, tensor<8x64x32xbf16> -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
