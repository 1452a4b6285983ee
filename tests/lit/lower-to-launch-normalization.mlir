// rudnn-lower-to-launch: each configured normalization op becomes one rudnn.launch of
// rudnn::norm::row_norm. Params: input, gamma, beta, output, rows, h, epsilon and the input's and
// output's row strides (the last extent unless a call passes a row-strided view); the launch
// numbers its operands, then its result.
// RUN: rudnn-opt %s --rudnn-lower-to-launch --split-input-file --verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<?x4096xbf16>, %[[G:.*]]: tensor<4096xf32>, %[[B:.*]]: tensor<4096xf32>)
// CHECK: %[[Y:.*]] = rudnn.launch @rudnn_layer_norm_bf16_t256_r1_v8(%[[X]], %[[G]], %[[B]])
// CHECK-SAME: header "rudnn/norm/row_norm.cuh" function "rudnn::norm::row_norm"
// CHECK-SAME: args ["rudnn::norm::LayerNorm", "rudnn::bf16", "rudnn::norm::RowPolicy<256, 1, 8>"]
// CHECK-SAME: config {rows_per_block = 1 : i64, threads_per_row = 256 : i64, vector_width = 8 : i64}
// CHECK-SAME: grid [#rudnn.size<rows(0)>, #rudnn.size<1>, #rudnn.size<1>] block [256, 1, 1] shared 64
// CHECK-SAME: params [#rudnn.param<"input" : "const rudnn::bf16*" = buffer(0)>,
// CHECK-SAME: #rudnn.param<"gamma" : "const float*" = buffer(1)>, #rudnn.param<"beta" : "const float*" = buffer(2)>,
// CHECK-SAME: #rudnn.param<"output" : "rudnn::bf16*" = buffer(3)>, #rudnn.param<"rows" : "long long" = size(rows(0))>,
// CHECK-SAME: #rudnn.param<"h" : "long long" = size(dim(0, 1))>, #rudnn.param<"epsilon" : "float" = f32(9.99999974E-6)>,
// CHECK-SAME: #rudnn.param<"input_row_stride" : "long long" = size(row_stride(0))>,
// CHECK-SAME: #rudnn.param<"output_row_stride" : "long long" = size(row_stride(3))>]
// CHECK-SAME: {origin = "rudnn.layer_norm"} : (tensor<?x4096xbf16>, tensor<4096xf32>, tensor<4096xf32>) -> tensor<?x4096xbf16>
// CHECK: return %[[Y]]
func.func @layer_norm(%x: tensor<?x4096xbf16>, %g: tensor<4096xf32>, %b: tensor<4096xf32>) -> tensor<?x4096xbf16> {
  %0 = rudnn.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32,
         kernel_config = {threads_per_row = 256, rows_per_block = 1, vector_width = 8}}
       : tensor<?x4096xbf16>, tensor<4096xf32>, tensor<4096xf32>
  return %0 : tensor<?x4096xbf16>
}

// Without beta the beta param is a null buffer and the output is the launch's operand 2.
// CHECK-LABEL: func.func @layer_norm_no_beta
// CHECK: rudnn.launch @rudnn_layer_norm_f16_t32_r4_v4(
// CHECK-SAME: grid [#rudnn.size<rows(0) ceildiv 4>, #rudnn.size<1>, #rudnn.size<1>] block [128, 1, 1] shared 32
// CHECK-SAME: #rudnn.param<"beta" : "const float*" = null>, #rudnn.param<"output" : "rudnn::f16*" = buffer(2)>
// CHECK-SAME: #rudnn.param<"h" : "long long" = size(dim(0, 2))>
// CHECK-SAME: #rudnn.param<"output_row_stride" : "long long" = size(row_stride(2))>
func.func @layer_norm_no_beta(%x: tensor<?x?x128xf16>, %g: tensor<128xf32>) -> tensor<?x?x128xf16> {
  %0 = rudnn.layer_norm %x, %g {epsilon = 1.0e-05 : f32,
         kernel_config = {threads_per_row = 32, rows_per_block = 4, vector_width = 4}}
       : tensor<?x?x128xf16>, tensor<128xf32>
  return %0 : tensor<?x?x128xf16>
}

// CHECK-LABEL: func.func @rms_norm
// CHECK: rudnn.launch @rudnn_rms_norm_f32_t64_r2_v1(
// CHECK-SAME: args ["rudnn::norm::RmsNorm", "float", "rudnn::norm::RowPolicy<64, 2, 1>"]
// CHECK-SAME: grid [#rudnn.size<rows(0) ceildiv 2>, #rudnn.size<1>, #rudnn.size<1>] block [128, 1, 1] shared 32
// CHECK-SAME: #rudnn.param<"beta" : "const float*" = null>, #rudnn.param<"output" : "float*" = buffer(2)>
// CHECK-SAME: #rudnn.param<"epsilon" : "float" = f32(9.99999997E-7)>
func.func @rms_norm(%x: tensor<?x100xf32>, %g: tensor<100xf32>) -> tensor<?x100xf32> {
  %0 = rudnn.rms_norm %x, %g {epsilon = 1.0e-06 : f32,
         kernel_config = {threads_per_row = 64, rows_per_block = 2, vector_width = 1}}
       : tensor<?x100xf32>, tensor<100xf32>
  return %0 : tensor<?x100xf32>
}

// CHECK-LABEL: func.func @softmax
// CHECK: rudnn.launch @rudnn_softmax_last_axis_f32_t1024_r1_v4(
// CHECK-SAME: args ["rudnn::norm::Softmax", "float", "rudnn::norm::RowPolicy<1024, 1, 4>"]
// CHECK-SAME: block [1024, 1, 1] shared 256
// CHECK-SAME: #rudnn.param<"gamma" : "const float*" = null>, #rudnn.param<"beta" : "const float*" = null>,
// CHECK-SAME: #rudnn.param<"output" : "float*" = buffer(1)>
// CHECK-SAME: #rudnn.param<"epsilon" : "float" = f32(0.000000e+00)>
func.func @softmax(%x: tensor<?x32000xf32>) -> tensor<?x32000xf32> {
  %0 = rudnn.softmax_last_axis %x {kernel_config = {threads_per_row = 1024, rows_per_block = 1, vector_width = 4}} : tensor<?x32000xf32>
  return %0 : tensor<?x32000xf32>
}

// A chain: the second op's input is the first op's result, which the first lowering replaces
// (regression: the pass once kept a view of the second op whose input was the erased op's result).
// CHECK-LABEL: func.func @softmax_chain
// CHECK: %[[A:.*]] = rudnn.launch @rudnn_softmax_last_axis_f32_t32_r4_v1(%{{.*}})
// CHECK: %[[B:.*]] = rudnn.launch @rudnn_softmax_last_axis_f32_t32_r4_v1(%[[A]])
// CHECK: return %[[B]]
func.func @softmax_chain(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %0 = rudnn.softmax_last_axis %x {kernel_config = {threads_per_row = 32, rows_per_block = 4, vector_width = 1}} : tensor<?x64xf32>
  %1 = rudnn.softmax_last_axis %0 {kernel_config = {threads_per_row = 32, rows_per_block = 4, vector_width = 1}} : tensor<?x64xf32>
  return %1 : tensor<?x64xf32>
}

// -----

// An op without a config cannot be lowered (rudnn-select-kernel-config or autotune must run first).
func.func @no_config(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{has no kernel_config (run rudnn-select-kernel-config first)}}
  %0 = rudnn.softmax_last_axis %x : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}
