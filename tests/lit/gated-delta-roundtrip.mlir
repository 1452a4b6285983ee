// rudnn.gated_delta parses, prints and parses again; rudnn-select-kernel-config and
// rudnn-lower-to-launch turn it into one rudnn.launch (recurrence for chunk_size 0, else chunked).
// RUN: rudnn-opt %s | rudnn-opt | FileCheck %s
// RUN: rudnn-opt %s --mlir-print-op-generic | rudnn-opt | FileCheck %s
// RUN: rudnn-opt %s --rudnn-select-kernel-config --rudnn-lower-to-launch | FileCheck %s --check-prefix=LAUNCH

// CHECK-LABEL: func.func @chunked
// CHECK: rudnn.gated_delta %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {chunk_size = 64 : i64, query_scale = 5.000000e-01 : f32}
// LAUNCH-LABEL: func.func @chunked
// LAUNCH: rudnn.launch @rudnn_gated_delta_chunked_bf16_f32_t256_c32_tc(
// LAUNCH-SAME: header "rudnn/gated_delta/chunked.cuh" function "rudnn::gated_delta::gated_delta_chunked"
// LAUNCH-SAME: args ["rudnn::bf16", "float", "rudnn::gated_delta::ChunkPolicy<256, 32, true>"]
// LAUNCH-SAME: grid [#rudnn.size<dim(0, 0) * dim(0, 1) * 4>, #rudnn.size<1>, #rudnn.size<1>] block [256, 1, 1] shared 125440
// LAUNCH-SAME: #rudnn.param<"initial_state" : "const float*" = buffer(5)>
// LAUNCH-SAME: #rudnn.param<"chunk" : "long long" = size(64)>, #rudnn.param<"query_scale" : "float" = f32(5.000000e-01)>
func.func @chunked(%q: tensor<?x?x?x128xbf16>, %k: tensor<?x?x?x128xbf16>, %v: tensor<?x?x?x128xbf16>,
                   %b: tensor<?x?x?xf32>, %g: tensor<?x?x?xf32>, %s: tensor<?x?x128x128xf32>)
    -> (tensor<?x?x?x128xbf16>, tensor<?x?x128x128xf32>) {
  %o, %f = rudnn.gated_delta %q, %k, %v, %b, %g, %s {query_scale = 0.5 : f32, chunk_size = 64 : i64}
      : tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>, tensor<?x?x?xf32>, tensor<?x?x?xf32>,
        tensor<?x?x128x128xf32> -> tensor<?x?x?x128xbf16>, tensor<?x?x128x128xf32>
  return %o, %f : tensor<?x?x?x128xbf16>, tensor<?x?x128x128xf32>
}

// CHECK-LABEL: func.func @recurrent
// LAUNCH-LABEL: func.func @recurrent
// LAUNCH: rudnn.launch @rudnn_gated_delta_recurrent_f16_f16_w4_r4(
// LAUNCH-SAME: block [128, 1, 1] shared 7488
// LAUNCH-SAME: #rudnn.param<"initial_state" : "const float*" = null>
func.func @recurrent(%q: tensor<2x4x1x64xf16>, %k: tensor<2x4x1x64xf16>, %v: tensor<2x4x1x32xf16>,
                     %b: tensor<2x4x1xf16>, %g: tensor<2x4x1xf16>) -> (tensor<2x4x1x32xf16>, tensor<2x4x64x32xf32>) {
  %o, %f = rudnn.gated_delta %q, %k, %v, %b, %g {query_scale = 1.0 : f32, chunk_size = 0 : i64}
      : tensor<2x4x1x64xf16>, tensor<2x4x1x64xf16>, tensor<2x4x1x32xf16>, tensor<2x4x1xf16>, tensor<2x4x1xf16>
        -> tensor<2x4x1x32xf16>, tensor<2x4x64x32xf32>
  return %o, %f : tensor<2x4x1x32xf16>, tensor<2x4x64x32xf32>
}
