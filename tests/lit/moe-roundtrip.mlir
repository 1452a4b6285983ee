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
