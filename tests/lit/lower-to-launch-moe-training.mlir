// rudnn-lower-to-launch on the MoE training ops (MoETrainingToLaunch.cpp): one launch each, every
// extent a runtime size of the op's operands; the router backward takes per-warp shared memory
// (64 h_j floats and 64 8-byte i_j per warp).
// RUN: rudnn-opt %s --rudnn-lower-to-launch | FileCheck %s

// CHECK-LABEL: func.func @router
// CHECK: rudnn.launch @rudnn_router_weights_bf16_i64_w4(%arg0, %arg1) header "rudnn/moe/router_weights.cuh" function "rudnn::moe::router_weights"
// CHECK-SAME: args ["rudnn::bf16", "rudnn::i64", "4"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0) ceildiv 4>, #rudnn.size<1>, #rudnn.size<1>] block [128, 1, 1] shared 0
// CHECK-SAME: #rudnn.param<"experts" : "long long" = size(dim(0, 1))>, #rudnn.param<"top_k" : "long long" = size(dim(1, 1))>, #rudnn.param<"sigmoid" : "long long" = size(1)>, #rudnn.param<"renormalize" : "long long" = size(0)>, #rudnn.param<"scale" : "float" = f32(2.500000e+00)>
// CHECK: rudnn.launch @rudnn_router_backward_bf16_i64_w2(%arg0, %arg1, %arg2) {{.*}}function "rudnn::moe::router_backward"
// CHECK-SAME: block [64, 1, 1] shared 1536
// CHECK-SAME: #rudnn.param<"grad_logits" : "rudnn::bf16*" = buffer(3)>
func.func @router(%x: tensor<?x64xbf16>, %i: tensor<?x8xi64>, %g: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x64xbf16>) {
  %w = rudnn.router_weights %x, %i {scoring = "sigmoid", renormalize = false, scale = 2.5 : f32, kernel_config = {warps = 4}} : tensor<?x64xbf16>, tensor<?x8xi64> -> tensor<?x8xf32>
  %d = rudnn.router_backward %x, %i, %g {scoring = "softmax", renormalize = true, scale = 1.0 : f32, kernel_config = {warps = 2}} : tensor<?x64xbf16>, tensor<?x8xi64>, tensor<?x8xf32> -> tensor<?x64xbf16>
  return %w, %d : tensor<?x8xf32>, tensor<?x64xbf16>
}

// CHECK-LABEL: func.func @combine_dispatch
// CHECK: %[[DY:.*]]:2 = rudnn.launch @rudnn_combine_backward_f16_f16_t128_plane(%arg0, %arg1, %arg2, %arg3) header "rudnn/moe/combine_backward.cuh" function "rudnn::moe::combine_backward"
// CHECK-SAME: args ["rudnn::f16", "rudnn::f16", "128", "true"]
// CHECK-SAME: grid [#rudnn.size<dim(2, 0)>, #rudnn.size<1>, #rudnn.size<1>] block [128, 1, 1] shared 0
// CHECK-SAME: #rudnn.param<"weights" : "const rudnn::f16*" = buffer(3)>, #rudnn.param<"slots" : "const rudnn::u32*" = buffer(2)>, #rudnn.param<"dexpert" : "rudnn::f16*" = buffer(4)>, #rudnn.param<"dweights" : "float*" = buffer(5)>
// CHECK: rudnn.launch @rudnn_dispatch_backward_f16_t64(%[[DY]]#0, %arg2) {{.*}}function "rudnn::moe::dispatch_backward"
// CHECK-SAME: #rudnn.param<"hidden" : "long long" = size(dim(0, 1))>
func.func @combine_dispatch(%y: tensor<?x128xf16>, %g: tensor<?x128xf16>, %s: tensor<?x8xui32>, %w: tensor<?x8xf16>) -> (tensor<?x8xf32>, tensor<?x128xf16>) {
  %dy, %dw = rudnn.combine_backward %y, %g, %s, %w {strategy = "plane", kernel_config = {threads = 128}} : tensor<?x128xf16>, tensor<?x128xf16>, tensor<?x8xui32>, tensor<?x8xf16> -> tensor<?x128xf16>, tensor<?x8xf32>
  %dx = rudnn.dispatch_backward %dy, %s {kernel_config = {threads = 64}} : tensor<?x128xf16>, tensor<?x8xui32> -> tensor<?x128xf16>
  return %dw, %dx : tensor<?x8xf32>, tensor<?x128xf16>
}

// The experts backward: each expert's rows in token order (expert_row_order, a u32 [N] temporary),
// hidden (dA, dB, Hh: three FP32 [N, I] temporaries), input (dinput), and three weight gradients
// summed over each expert's rows in that order; tile 1 = ScalarGemmPolicy<32, 64, 16, 4, 4> (128 threads).
// CHECK-LABEL: func.func @experts_backward
// CHECK: %[[O:.*]] = rudnn.launch @rudnn_expert_row_order(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6) header "rudnn/moe/experts_backward_scalar.cuh" function "rudnn::moe::expert_row_order"
// CHECK-SAME: args ["256"] config {} grid [#rudnn.size<dim(3, 0)>, #rudnn.size<1>, #rudnn.size<1>] block [256, 1, 1] shared 32
// CHECK-SAME: #rudnn.param<"assignments" : "long long" = size(dim(2, 0) * dim(2, 1))>
// CHECK-SAME: result_elements = [#rudnn.size<dim(0, 0)>]
// CHECK: %[[H:.*]]:3 = rudnn.launch @rudnn_swiglu_backward_hidden_bf16_32x64x16_t4x4(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %[[O]]) header "rudnn/moe/experts_backward_scalar.cuh" function "rudnn::moe::swiglu_backward_hidden_scalar"
// CHECK-SAME: args ["rudnn::bf16", "rudnn::moe::ScalarGemmPolicy<32, 64, 16, 4, 4>"]
// CHECK-SAME: grid [#rudnn.size<dim(3, 1) ceildiv 64>, #rudnn.size<dim(0, 0) ceildiv 32>, #rudnn.size<1>] block [128, 1, 1] shared 11008
// CHECK-SAME: result_elements = [#rudnn.size<dim(0, 0) * dim(3, 1)>, #rudnn.size<dim(0, 0) * dim(3, 1)>, #rudnn.size<dim(0, 0) * dim(3, 1)>]
// CHECK: %[[DX:.*]] = rudnn.launch @rudnn_swiglu_backward_input_bf16_32x64x16_t4x4({{.*}}, %[[O]], %[[H]]#0, %[[H]]#1, %[[H]]#2)
// CHECK-SAME: #rudnn.param<"da" : "const float*" = buffer(8)>, #rudnn.param<"db" : "const float*" = buffer(9)>
// CHECK: %[[DG:.*]] = rudnn.launch @rudnn_experts_weight_grad_f32_bf16_32x64x16_t4x4
// CHECK-SAME: #rudnn.param<"p" : "const float*" = buffer(8)>, #rudnn.param<"q" : "const rudnn::bf16*" = buffer(0)>, #rudnn.param<"offsets" : "const rudnn::u32*" = buffer(1)>, #rudnn.param<"order" : "const rudnn::u32*" = buffer(7)>
// CHECK: %[[DU:.*]] = rudnn.launch @rudnn_experts_weight_grad_f32_bf16_32x64x16_t4x4
// CHECK-SAME: #rudnn.param<"p" : "const float*" = buffer(9)>
// CHECK: %[[DD:.*]] = rudnn.launch @rudnn_experts_weight_grad_bf16_f32_32x64x16_t4x4
// CHECK-SAME: #rudnn.param<"p" : "const rudnn::bf16*" = buffer(6)>, #rudnn.param<"q" : "const float*" = buffer(10)>
// CHECK: return %[[DX]], %[[DG]], %[[DU]], %[[DD]]
func.func @experts_backward(%r: tensor<?x32xbf16>, %o: tensor<9xui32>, %sl: tensor<?x2xui32>, %g: tensor<8x16x32xbf16>,
                            %u: tensor<8x16x32xbf16>, %d: tensor<8x32x16xbf16>, %dy: tensor<?x32xbf16>)
    -> (tensor<?x32xbf16>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>) {
  %dx, %dg, %du, %dd = rudnn.swiglu_experts_backward %r, %o, %sl, %g, %u, %d, %dy {strategy = "scalar", kernel_config = {tile = 1}}
      : tensor<?x32xbf16>, tensor<9xui32>, tensor<?x2xui32>, tensor<8x16x32xbf16>, tensor<8x16x32xbf16>, tensor<8x32x16xbf16>, tensor<?x32xbf16>
      -> tensor<?x32xbf16>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>
  return %dx, %dg, %du, %dd : tensor<?x32xbf16>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>
}

// The tensor-core backward (tile 3 = gemm::BlockPolicy<64, 64, 32, 2, 2, 3, true>, 128 threads): the same
// six launches from moe/experts_backward_mma.cuh, with dA, dB and Hh in the weights' dtype (the next
// products' 16-bit operands) and one T for both weight-gradient operands.
// CHECK-LABEL: func.func @experts_backward_tensor_core
// CHECK: %[[O:.*]] = rudnn.launch @rudnn_expert_row_order
// CHECK: %[[H:.*]]:3 = rudnn.launch @rudnn_swiglu_backward_hidden_bf16_64x64x32_w2x2_s3({{.*}}) header "rudnn/moe/experts_backward_mma.cuh" function "rudnn::moe::swiglu_backward_hidden_mma"
// CHECK-SAME: args ["rudnn::bf16", "rudnn::gemm::BlockPolicy<64, 64, 32, 2, 2, 3, true>"]
// CHECK-SAME: grid [#rudnn.size<dim(3, 1) ceildiv 64>, #rudnn.size<dim(0, 0) ceildiv 64>, #rudnn.size<1>] block [128, 1, 1] shared 46080
// CHECK-SAME: #rudnn.param<"da" : "rudnn::bf16*" = buffer(8)>
// CHECK-SAME: -> (tensor<?xbf16>, tensor<?xbf16>, tensor<?xbf16>)
// CHECK: %[[DX:.*]] = rudnn.launch @rudnn_swiglu_backward_input_bf16_64x64x32_w2x2_s3({{.*}}, %[[O]], %[[H]]#0, %[[H]]#1, %[[H]]#2)
// CHECK-SAME: function "rudnn::moe::swiglu_backward_input_mma"
// CHECK-SAME: block [128, 1, 1] shared 29184
// CHECK: %[[DG:.*]] = rudnn.launch @rudnn_experts_weight_grad_bf16_bf16_64x64x32_w2x2_s3
// CHECK-SAME: function "rudnn::moe::experts_weight_grad_mma" args ["rudnn::bf16", "rudnn::gemm::BlockPolicy<64, 64, 32, 2, 2, 3, true>"]
// CHECK-SAME: shared 27648
// CHECK-SAME: #rudnn.param<"p" : "const rudnn::bf16*" = buffer(8)>, #rudnn.param<"q" : "const rudnn::bf16*" = buffer(0)>
// CHECK: %[[DU:.*]] = rudnn.launch @rudnn_experts_weight_grad_bf16_bf16_64x64x32_w2x2_s3
// CHECK-SAME: #rudnn.param<"p" : "const rudnn::bf16*" = buffer(9)>
// CHECK: %[[DD:.*]] = rudnn.launch @rudnn_experts_weight_grad_bf16_bf16_64x64x32_w2x2_s3
// CHECK-SAME: #rudnn.param<"p" : "const rudnn::bf16*" = buffer(6)>, #rudnn.param<"q" : "const rudnn::bf16*" = buffer(10)>
// CHECK: return %[[DX]], %[[DG]], %[[DU]], %[[DD]]
func.func @experts_backward_tensor_core(%r: tensor<?x32xbf16>, %o: tensor<9xui32>, %sl: tensor<?x2xui32>, %g: tensor<8x16x32xbf16>,
                                        %u: tensor<8x16x32xbf16>, %d: tensor<8x32x16xbf16>, %dy: tensor<?x32xbf16>)
    -> (tensor<?x32xbf16>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>) {
  %dx, %dg, %du, %dd = rudnn.swiglu_experts_backward %r, %o, %sl, %g, %u, %d, %dy {strategy = "tensor_core", kernel_config = {tile = 3}}
      : tensor<?x32xbf16>, tensor<9xui32>, tensor<?x2xui32>, tensor<8x16x32xbf16>, tensor<8x16x32xbf16>, tensor<8x32x16xbf16>, tensor<?x32xbf16>
      -> tensor<?x32xbf16>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>
  return %dx, %dg, %du, %dd : tensor<?x32xbf16>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>
}
