// rudnn-lower-to-launch on rudnn.gated_delta: one launch, gated_delta_recurrent (chunk_size 0) or
// gated_delta_chunked, one block per (batch, head, 32 state columns): grid.x = B · H · ceil(V / 32).
// Operands query, key, value, beta, log_decay, initial_state?; results output, final_state.
// RUN: rudnn-opt %s --rudnn-lower-to-launch | FileCheck %s

// Recurrence 4x8 with an initial state: 4 · (8 · (2 · 128 + 34) + 144 · 4) = 11584 bytes.
// CHECK-LABEL: func.func @recurrent
// CHECK-SAME: (%[[Q:.*]]: tensor<?x4x1x128xbf16>, %[[B:.*]]: tensor<?x4x1xbf16>, %[[S:.*]]: tensor<?x4x128x128xf32>)
// CHECK: %[[R:.*]]:2 = rudnn.launch @rudnn_gated_delta_recurrent_bf16_bf16_w4_r8(%[[Q]], %[[Q]], %[[Q]], %[[B]], %[[B]], %[[S]])
// CHECK-SAME: header "rudnn/gated_delta/recurrent.cuh" function "rudnn::gated_delta::gated_delta_recurrent"
// CHECK-SAME: args ["rudnn::bf16", "rudnn::bf16", "rudnn::gated_delta::RecurrentPolicy<4, 8>"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0) * dim(0, 1) * 4>, #rudnn.size<1>, #rudnn.size<1>] block [128, 1, 1] shared 11584
// CHECK-SAME: #rudnn.param<"initial_state" : "const float*" = buffer(5)>, #rudnn.param<"output" : "rudnn::bf16*" = buffer(6)>,
// CHECK-SAME: #rudnn.param<"final_state" : "float*" = buffer(7)>, #rudnn.param<"batch" : "long long" = size(dim(0, 0))>,
// CHECK-SAME: #rudnn.param<"heads" : "long long" = size(dim(0, 1))>, #rudnn.param<"seq" : "long long" = size(dim(0, 2))>,
// CHECK-SAME: #rudnn.param<"key_dim" : "long long" = size(128)>, #rudnn.param<"value_dim" : "long long" = size(128)>,
// CHECK-SAME: #rudnn.param<"query_scale" : "float" = f32(8.838830e-02)>] {origin = "rudnn.gated_delta"}
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @recurrent(%q: tensor<?x4x1x128xbf16>, %b: tensor<?x4x1xbf16>, %s: tensor<?x4x128x128xf32>)
    -> (tensor<?x4x1x128xbf16>, tensor<?x4x128x128xf32>) {
  %o, %s1 = rudnn.gated_delta %q, %q, %q, %b, %b, %s {query_scale = 0.0883883 : f32, chunk_size = 0 : i64,
              kernel_config = {warps = 4, rows_per_thread = 8}}
      : tensor<?x4x1x128xbf16>, tensor<?x4x1x128xbf16>, tensor<?x4x1x128xbf16>, tensor<?x4x1xbf16>, tensor<?x4x1xbf16>,
        tensor<?x4x128x128xf32> -> tensor<?x4x1x128xbf16>, tensor<?x4x128x128xf32>
  return %o, %s1 : tensor<?x4x1x128xbf16>, tensor<?x4x128x128xf32>
}

// Chunked on tensor cores, no initial state (a null buffer); the chunk length is a size param.
// CHECK-LABEL: func.func @chunked
// CHECK: rudnn.launch @rudnn_gated_delta_chunked_bf16_bf16_t256_c32_tc(
// CHECK-SAME: header "rudnn/gated_delta/chunked.cuh" function "rudnn::gated_delta::gated_delta_chunked"
// CHECK-SAME: args ["rudnn::bf16", "rudnn::bf16", "rudnn::gated_delta::ChunkPolicy<256, 32, true>"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0) * dim(0, 1) * 4>, #rudnn.size<1>, #rudnn.size<1>] block [256, 1, 1] shared 125440
// CHECK-SAME: #rudnn.param<"initial_state" : "const float*" = null>, #rudnn.param<"output" : "rudnn::bf16*" = buffer(5)>
// CHECK-SAME: #rudnn.param<"chunk" : "long long" = size(64)>
func.func @chunked(%q: tensor<?x4x100x128xbf16>, %b: tensor<?x4x100xbf16>) -> (tensor<?x4x100x128xbf16>, tensor<?x4x128x128xf32>) {
  %o, %s = rudnn.gated_delta %q, %q, %q, %b, %b {query_scale = 0.0883883 : f32, chunk_size = 64 : i64,
             kernel_config = {threads = 256, columns = 32, tensor_core = 1}}
      : tensor<?x4x100x128xbf16>, tensor<?x4x100x128xbf16>, tensor<?x4x100x128xbf16>, tensor<?x4x100xbf16>,
        tensor<?x4x100xbf16> -> tensor<?x4x100x128xbf16>, tensor<?x4x128x128xf32>
  return %o, %s : tensor<?x4x100x128xbf16>, tensor<?x4x128x128xf32>
}

// Chunked f32 on plain cores: 64 value columns → 2 blocks per (batch, head).
// CHECK-LABEL: func.func @chunked_f32
// CHECK: rudnn.launch @rudnn_gated_delta_chunked_f32_f32_t128_c32(
// CHECK-SAME: args ["float", "float", "rudnn::gated_delta::ChunkPolicy<128, 32, false>"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0) * dim(0, 1) * 2>, #rudnn.size<1>, #rudnn.size<1>] block [128, 1, 1] shared 41600
// CHECK-SAME: #rudnn.param<"chunk" : "long long" = size(32)>
func.func @chunked_f32(%q: tensor<1x2x64x64xf32>, %b: tensor<1x2x64xf32>) -> (tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>) {
  %o, %s = rudnn.gated_delta %q, %q, %q, %b, %b {query_scale = 0.125 : f32, chunk_size = 32 : i64,
             kernel_config = {threads = 128, columns = 32, tensor_core = 0}}
      : tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>, tensor<1x2x64xf32>, tensor<1x2x64xf32>
        -> tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>
  return %o, %s : tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>
}
