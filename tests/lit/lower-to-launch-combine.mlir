// rudnn-lower-to-launch on rudnn.combine: one launch of rudnn::moe::combine<T, W, RowCopyPolicy<threads,
// vector_width>>, one block per token (grid.x = the slots' rows), no shared memory; the weighted sum of
// the token's top_k expert rows in j order.
// RUN: rudnn-opt %s --rudnn-lower-to-launch | FileCheck %s

// CHECK-LABEL: func.func @combine
// CHECK-SAME: (%[[Y:.*]]: tensor<?x64xbf16>, %[[S:.*]]: tensor<?x8xui32>, %[[W:.*]]: tensor<?x8xbf16>)
// CHECK: %[[OUT:.*]] = rudnn.launch @rudnn_combine_bf16_bf16_t64_v8(%[[Y]], %[[S]], %[[W]])
// CHECK-SAME: header "rudnn/moe/combine.cuh" function "rudnn::moe::combine"
// CHECK-SAME: args ["rudnn::bf16", "rudnn::bf16", "rudnn::moe::RowCopyPolicy<64, 8>"] config {threads = 64 : i64, vector_width = 8 : i64}
// CHECK-SAME: grid [#rudnn.size<rows(1)>, #rudnn.size<1>, #rudnn.size<1>] block [64, 1, 1] shared 0
// CHECK-SAME: params [#rudnn.param<"expert_rows" : "const rudnn::bf16*" = buffer(0)>,
// CHECK-SAME: #rudnn.param<"slots" : "const rudnn::u32*" = buffer(1)>, #rudnn.param<"weights" : "const rudnn::bf16*" = buffer(2)>,
// CHECK-SAME: #rudnn.param<"out" : "rudnn::bf16*" = buffer(3)>, #rudnn.param<"tokens" : "long long" = size(rows(1))>,
// CHECK-SAME: #rudnn.param<"top_k" : "long long" = size(8)>, #rudnn.param<"hidden" : "long long" = size(64)>]
// CHECK-SAME: {origin = "rudnn.combine"}
// CHECK: return %[[OUT]]
func.func @combine(%y: tensor<?x64xbf16>, %s: tensor<?x8xui32>, %w: tensor<?x8xbf16>) -> tensor<?x64xbf16> {
  %out = rudnn.combine %y, %s, %w {kernel_config = {threads = 64, vector_width = 8}}
           : tensor<?x64xbf16>, tensor<?x8xui32>, tensor<?x8xbf16> -> tensor<?x64xbf16>
  return %out : tensor<?x64xbf16>
}

// f16 rows with f32 weights: the weight type is the second template argument.
// CHECK-LABEL: func.func @combine_f32_weights
// CHECK: rudnn.launch @rudnn_combine_f16_f32_t256_v8(
// CHECK-SAME: args ["rudnn::f16", "float", "rudnn::moe::RowCopyPolicy<256, 8>"]
// CHECK-SAME: block [256, 1, 1] shared 0
// CHECK-SAME: #rudnn.param<"weights" : "const float*" = buffer(2)>, #rudnn.param<"out" : "rudnn::f16*" = buffer(3)>
// CHECK-SAME: #rudnn.param<"hidden" : "long long" = size(7168)>]
func.func @combine_f32_weights(%y: tensor<?x7168xf16>, %s: tensor<?x8xui32>, %w: tensor<?x8xf32>) -> tensor<?x7168xf16> {
  %out = rudnn.combine %y, %s, %w {kernel_config = {threads = 256, vector_width = 8}}
           : tensor<?x7168xf16>, tensor<?x8xui32>, tensor<?x8xf32> -> tensor<?x7168xf16>
  return %out : tensor<?x7168xf16>
}
