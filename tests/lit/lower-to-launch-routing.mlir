// rudnn-lower-to-launch on the routing ops: one launch each (one warp per token row, block =
// 32 × rows_per_block threads, grid.x = ceil_div(rows, rows_per_block)). The grouped kernel keeps
// rows_per_block × (experts + 2 × groups) floats in shared memory; softmax routing needs none. The
// launch numbers its operands, then its two results (indices, weights).
// RUN: rudnn-opt %s --rudnn-lower-to-launch | FileCheck %s

// CHECK-LABEL: func.func @route
// CHECK-SAME: (%[[L:.*]]: tensor<?x64xbf16>)
// CHECK: %[[R:.*]]:2 = rudnn.launch @rudnn_route_bf16_r4(%[[L]])
// CHECK-SAME: header "rudnn/moe/route_softmax_topk.cuh" function "rudnn::moe::route_softmax_topk"
// CHECK-SAME: args ["rudnn::bf16", "rudnn::moe::RoutePolicy<4>"] config {rows_per_block = 4 : i64}
// CHECK-SAME: grid [#rudnn.size<rows(0) ceildiv 4>, #rudnn.size<1>, #rudnn.size<1>] block [128, 1, 1] shared 0
// CHECK-SAME: params [#rudnn.param<"logits" : "const rudnn::bf16*" = buffer(0)>,
// CHECK-SAME: #rudnn.param<"indices" : "rudnn::u32*" = buffer(1)>, #rudnn.param<"weights" : "rudnn::bf16*" = buffer(2)>,
// CHECK-SAME: #rudnn.param<"rows" : "long long" = size(rows(0))>, #rudnn.param<"experts" : "long long" = size(dim(0, 1))>,
// CHECK-SAME: #rudnn.param<"top_k" : "long long" = size(8)>, #rudnn.param<"renormalize" : "long long" = size(1)>]
// CHECK-SAME: {origin = "rudnn.route"} : (tensor<?x64xbf16>) -> (tensor<?x8xui32>, tensor<?x8xbf16>)
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @route(%l: tensor<?x64xbf16>) -> (tensor<?x8xui32>, tensor<?x8xbf16>) {
  %i, %w = rudnn.route %l {top_k = 8 : i64, renormalize = true, kernel_config = {rows_per_block = 4}}
           : tensor<?x64xbf16> -> tensor<?x8xui32>, tensor<?x8xbf16>
  return %i, %w : tensor<?x8xui32>, tensor<?x8xbf16>
}

// 4 × (256 + 2 × 8) × 4 bytes = 4352.
// CHECK-LABEL: func.func @grouped
// CHECK-SAME: (%[[L:.*]]: tensor<?x256xbf16>, %[[B:.*]]: tensor<256xf32>)
// CHECK: rudnn.launch @rudnn_route_sigmoid_grouped_bf16_r4(%[[L]], %[[B]])
// CHECK-SAME: header "rudnn/moe/route_sigmoid_grouped.cuh" function "rudnn::moe::route_sigmoid_grouped"
// CHECK-SAME: args ["rudnn::bf16", "rudnn::moe::RoutePolicy<4>"]
// CHECK-SAME: grid [#rudnn.size<rows(0) ceildiv 4>, #rudnn.size<1>, #rudnn.size<1>] block [128, 1, 1] shared 4352
// CHECK-SAME: #rudnn.param<"bias" : "const float*" = buffer(1)>, #rudnn.param<"indices" : "rudnn::u32*" = buffer(2)>
// CHECK-SAME: #rudnn.param<"groups" : "long long" = size(8)>, #rudnn.param<"selected_groups" : "long long" = size(4)>,
// CHECK-SAME: #rudnn.param<"group_top_two" : "long long" = size(1)>, #rudnn.param<"renormalize" : "long long" = size(1)>,
// CHECK-SAME: #rudnn.param<"scale" : "float" = f32(2.500000e+00)>]
func.func @grouped(%l: tensor<?x256xbf16>, %b: tensor<256xf32>) -> (tensor<?x8xui32>, tensor<?x8xbf16>) {
  %i, %w = rudnn.route_sigmoid_grouped %l, %b {top_k = 8 : i64, groups = 8 : i64,
             selected_groups = 4 : i64, group_top_two = true, renormalize = true, scale = 2.5 : f32,
             kernel_config = {rows_per_block = 4}}
           : tensor<?x256xbf16>, tensor<256xf32> -> tensor<?x8xui32>, tensor<?x8xbf16>
  return %i, %w : tensor<?x8xui32>, tensor<?x8xbf16>
}

// Without bias the bias param is null; 2 × (1024 + 16) × 4 = 8320 bytes.
// CHECK-LABEL: func.func @grouped_no_bias
// CHECK: rudnn.launch @rudnn_route_sigmoid_grouped_f32_r2(
// CHECK-SAME: args ["float", "rudnn::moe::RoutePolicy<2>"]
// CHECK-SAME: grid [#rudnn.size<rows(0) ceildiv 2>, #rudnn.size<1>, #rudnn.size<1>] block [64, 1, 1] shared 8320
// CHECK-SAME: #rudnn.param<"bias" : "const float*" = null>, #rudnn.param<"indices" : "rudnn::u32*" = buffer(1)>
func.func @grouped_no_bias(%l: tensor<?x1024xf32>) -> (tensor<?x8xui32>, tensor<?x8xf32>) {
  %i, %w = rudnn.route_sigmoid_grouped %l {top_k = 8 : i64, groups = 8 : i64,
             selected_groups = 4 : i64, group_top_two = false, renormalize = false, scale = 1.0 : f32,
             kernel_config = {rows_per_block = 2}}
           : tensor<?x1024xf32> -> tensor<?x8xui32>, tensor<?x8xf32>
  return %i, %w : tensor<?x8xui32>, tensor<?x8xf32>
}
