// The MoE routing ops parse, print and parse again; rudnn-select-kernel-config and
// rudnn-lower-to-launch turn each into one rudnn.launch (one warp per token row).
// RUN: rudnn-opt %s | rudnn-opt | FileCheck %s
// RUN: rudnn-opt %s --mlir-print-op-generic | rudnn-opt | FileCheck %s
// RUN: rudnn-opt %s --rudnn-select-kernel-config --rudnn-lower-to-launch | FileCheck %s --check-prefix=LAUNCH

// CHECK-LABEL: func.func @route
// CHECK: rudnn.route %{{.*}} {renormalize = true, top_k = 8 : i64} : tensor<?x64xbf16> -> tensor<?x8xui32>, tensor<?x8xbf16>
// LAUNCH-LABEL: func.func @route
// LAUNCH: rudnn.launch @rudnn_route_bf16_r4(
// LAUNCH-SAME: header "rudnn/moe/route_softmax_topk.cuh" function "rudnn::moe::route_softmax_topk"
// LAUNCH-SAME: args ["rudnn::bf16", "rudnn::moe::RoutePolicy<4>"]
// LAUNCH-SAME: grid [#rudnn.size<rows(0) ceildiv 4>, #rudnn.size<1>, #rudnn.size<1>] block [128, 1, 1] shared 0
// LAUNCH-SAME: #rudnn.param<"indices" : "rudnn::u32*" = buffer(1)>, #rudnn.param<"weights" : "rudnn::bf16*" = buffer(2)>
// LAUNCH-SAME: #rudnn.param<"top_k" : "long long" = size(8)>
// LAUNCH-SAME: -> (tensor<?x8xui32>, tensor<?x8xbf16>)
func.func @route(%x: tensor<?x64xbf16>) -> (tensor<?x8xui32>, tensor<?x8xbf16>) {
  %i, %w = rudnn.route %x {top_k = 8 : i64, renormalize = true} : tensor<?x64xbf16> -> tensor<?x8xui32>, tensor<?x8xbf16>
  return %i, %w : tensor<?x8xui32>, tensor<?x8xbf16>
}

// CHECK-LABEL: func.func @grouped
// CHECK: rudnn.route_sigmoid_grouped %{{.*}}, %{{.*}} {group_top_two = true, groups = 8 : i64, renormalize = true, scale = 2.500000e+00 : f32, selected_groups = 4 : i64, top_k = 8 : i64} : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x8xui32>, tensor<?x8xf32>
// LAUNCH-LABEL: func.func @grouped
// LAUNCH: rudnn.launch @rudnn_route_sigmoid_grouped_f32_r4(
// LAUNCH-SAME: shared 4352
// LAUNCH-SAME: #rudnn.param<"bias" : "const float*" = buffer(1)>
// LAUNCH-SAME: #rudnn.param<"scale" : "float" = f32(2.500000e+00)>
func.func @grouped(%x: tensor<?x256xf32>, %b: tensor<256xf32>) -> (tensor<?x8xui32>, tensor<?x8xf32>) {
  %i, %w = rudnn.route_sigmoid_grouped %x, %b {top_k = 8 : i64, groups = 8 : i64, selected_groups = 4 : i64,
             group_top_two = true, renormalize = true, scale = 2.5 : f32}
           : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x8xui32>, tensor<?x8xf32>
  return %i, %w : tensor<?x8xui32>, tensor<?x8xf32>
}

// CHECK-LABEL: func.func @grouped_no_bias
// CHECK: rudnn.route_sigmoid_grouped %{{.*}} {{{.*}}kernel_config = {rows_per_block = 2 : i64}{{.*}}} : tensor<3x1024xf16> -> tensor<3x64xui32>, tensor<3x64xf16>
// LAUNCH-LABEL: func.func @grouped_no_bias
// LAUNCH: rudnn.launch @rudnn_route_sigmoid_grouped_f16_r2(
// LAUNCH-SAME: #rudnn.param<"bias" : "const float*" = null>
func.func @grouped_no_bias(%x: tensor<3x1024xf16>) -> (tensor<3x64xui32>, tensor<3x64xf16>) {
  %i, %w = rudnn.route_sigmoid_grouped %x {top_k = 64 : i64, groups = 128 : i64, selected_groups = 128 : i64,
             group_top_two = false, renormalize = false, scale = 1.0 : f32, kernel_config = {rows_per_block = 2}}
           : tensor<3x1024xf16> -> tensor<3x64xui32>, tensor<3x64xf16>
  return %i, %w : tensor<3x64xui32>, tensor<3x64xf16>
}

// The MoE forward chain: route → dispatch → swiglu_experts → combine. Dispatch lowers to two
// launches (rank in one block, then scatter); the experts to gate/up (whose act result is a
// temporary sized by result_elements) and down; combine to one launch.
// CHECK-LABEL: func.func @forward
// CHECK: rudnn.dispatch %{{.*}}, %{{.*}} {experts = 8 : i64} : tensor<?x64xbf16>, tensor<?x2xui32> -> tensor<?x64xbf16>, tensor<9xui32>, tensor<?x2xui32>
// CHECK: rudnn.swiglu_experts %{{.*}} {strategy = "auto"} : tensor<?x64xbf16>, tensor<9xui32>, tensor<8x32x64xbf16>, tensor<8x32x64xbf16>, tensor<8x64x32xbf16> -> tensor<?x64xbf16>
// CHECK: rudnn.combine %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x64xbf16>, tensor<?x2xui32>, tensor<?x2xbf16> -> tensor<?x64xbf16>
// LAUNCH-LABEL: func.func @forward
// LAUNCH: %[[R:.*]]:2 = rudnn.launch @rudnn_route_bf16_r4
// LAUNCH: %[[D:.*]]:2 = rudnn.launch @rudnn_dispatch_rank_t1024(%[[R]]#0) header "rudnn/moe/dispatch.cuh" function "rudnn::moe::dispatch_rank"
// LAUNCH-SAME: grid [#rudnn.size<1>, #rudnn.size<1>, #rudnn.size<1>] block [1024, 1, 1] shared 48
// LAUNCH-SAME: #rudnn.param<"assignments" : "long long" = size(rows(0) * dim(0, 1))>
// LAUNCH-SAME: -> (tensor<9xui32>, tensor<?x2xui32>)
// LAUNCH: %[[ROWS:.*]] = rudnn.launch @rudnn_dispatch_scatter_bf16_t64_v8(%{{.*}}, %[[D]]#1)
// LAUNCH-SAME: args ["rudnn::bf16", "rudnn::moe::RowCopyPolicy<64, 8>"]
// LAUNCH: %[[ACT:.*]] = rudnn.launch @rudnn_swiglu_gate_up_mma_bf16_64x64x32_w2x2_s4(%[[ROWS]], %[[D]]#0,
// LAUNCH-SAME: args ["rudnn::bf16", "rudnn::moe::MmaGemmPolicy<64, 64, 32, 2, 2, 4>"]
// LAUNCH-SAME: grid [#rudnn.size<32 ceildiv 64>, #rudnn.size<rows(0) ceildiv 64>, #rudnn.size<1>] block [128, 1, 1]
// LAUNCH-SAME: result_elements = [#rudnn.size<rows(0) * 32>]
// LAUNCH-SAME: -> tensor<?x32xbf16>
// LAUNCH: %[[Y:.*]] = rudnn.launch @rudnn_expert_down_mma_bf16_64x64x32_w2x2_s4(%[[ACT]], %[[D]]#0, %{{.*}})
// LAUNCH: rudnn.launch @rudnn_combine_bf16_bf16_t64_v8(%[[Y]], %[[D]]#1, %[[R]]#1)
// LAUNCH-SAME: grid [#rudnn.size<rows(1)>, #rudnn.size<1>, #rudnn.size<1>] block [64, 1, 1] shared 0
func.func @forward(%x: tensor<?x64xbf16>, %logits: tensor<?x8xbf16>, %g: tensor<8x32x64xbf16>, %u: tensor<8x32x64xbf16>,
                   %d: tensor<8x64x32xbf16>) -> tensor<?x64xbf16> {
  %i, %w = rudnn.route %logits {top_k = 2 : i64, renormalize = true} : tensor<?x8xbf16> -> tensor<?x2xui32>, tensor<?x2xbf16>
  %rows, %offsets, %slots = rudnn.dispatch %x, %i {experts = 8 : i64}
      : tensor<?x64xbf16>, tensor<?x2xui32> -> tensor<?x64xbf16>, tensor<9xui32>, tensor<?x2xui32>
  %y = rudnn.swiglu_experts %rows, %offsets, %g, %u, %d {strategy = "auto"}
      : tensor<?x64xbf16>, tensor<9xui32>, tensor<8x32x64xbf16>, tensor<8x32x64xbf16>, tensor<8x64x32xbf16> -> tensor<?x64xbf16>
  %out = rudnn.combine %y, %slots, %w : tensor<?x64xbf16>, tensor<?x2xui32>, tensor<?x2xbf16> -> tensor<?x64xbf16>
  return %out : tensor<?x64xbf16>
}

// Strategy "auto" on f32 weights resolves to the scalar tile; a forced kernel_config is kept.
// LAUNCH-LABEL: func.func @scalar_experts
// LAUNCH: rudnn.launch @rudnn_swiglu_gate_up_scalar_f32_32x64x16_t4x4(
// LAUNCH-SAME: args ["float", "rudnn::moe::ScalarGemmPolicy<32, 64, 16, 4, 4>"]
// LAUNCH: rudnn.launch @rudnn_expert_down_scalar_f32_32x64x16_t4x4(
// LAUNCH: rudnn.launch @rudnn_swiglu_gate_up_scalar_f32_16x32x16_t2x2(
func.func @scalar_experts(%rows: tensor<?x24xf32>, %off: tensor<5xui32>, %g: tensor<4x40x24xf32>, %u: tensor<4x40x24xf32>,
                          %d: tensor<4x24x40xf32>) -> (tensor<?x24xf32>, tensor<?x24xf32>) {
  %a = rudnn.swiglu_experts %rows, %off, %g, %u, %d {strategy = "auto"}
      : tensor<?x24xf32>, tensor<5xui32>, tensor<4x40x24xf32>, tensor<4x40x24xf32>, tensor<4x24x40xf32> -> tensor<?x24xf32>
  %b = rudnn.swiglu_experts %rows, %off, %g, %u, %d {strategy = "scalar", kernel_config = {tensor_core = 0, block_m = 16,
        block_n = 32, block_k = 16, thread_m = 2, thread_n = 2}}
      : tensor<?x24xf32>, tensor<5xui32>, tensor<4x40x24xf32>, tensor<4x40x24xf32>, tensor<4x24x40xf32> -> tensor<?x24xf32>
  return %a, %b : tensor<?x24xf32>, tensor<?x24xf32>
}
