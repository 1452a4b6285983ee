// rudnn-lower-to-launch on rudnn.dispatch: two launches. dispatch_rank (one block of rank_threads,
// round_up((experts + 1) × 4, 16) bytes of counters) reads the indices and writes the offsets and
// slots; dispatch_scatter (one block per assignment, tokens × top_k) copies each token's row to its
// slot, reading the first launch's slots.
// RUN: rudnn-opt %s --rudnn-lower-to-launch | FileCheck %s

// CHECK-LABEL: func.func @dispatch
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xbf16>, %[[I:.*]]: tensor<?x8xui32>)
// CHECK: %[[RANK:.*]]:2 = rudnn.launch @rudnn_dispatch_rank_t1024(%[[I]])
// CHECK-SAME: header "rudnn/moe/dispatch.cuh" function "rudnn::moe::dispatch_rank" args ["rudnn::moe::DispatchPolicy<1024>"]
// CHECK-SAME: grid [#rudnn.size<1>, #rudnn.size<1>, #rudnn.size<1>] block [1024, 1, 1] shared 1040
// CHECK-SAME: params [#rudnn.param<"indices" : "const rudnn::u32*" = buffer(0)>,
// CHECK-SAME: #rudnn.param<"offsets" : "rudnn::u32*" = buffer(1)>, #rudnn.param<"slots" : "rudnn::u32*" = buffer(2)>,
// CHECK-SAME: #rudnn.param<"assignments" : "long long" = size(rows(0) * dim(0, 1))>, #rudnn.param<"experts" : "long long" = size(256)>]
// CHECK-SAME: {origin = "rudnn.dispatch"} : (tensor<?x8xui32>) -> (tensor<257xui32>, tensor<?x8xui32>)
// CHECK: %[[ROWS:.*]] = rudnn.launch @rudnn_dispatch_scatter_bf16_t64_v8(%[[X]], %[[RANK]]#1)
// CHECK-SAME: function "rudnn::moe::dispatch_scatter" args ["rudnn::bf16", "rudnn::moe::RowCopyPolicy<64, 8>"]
// CHECK-SAME: grid [#rudnn.size<rows(1) * dim(1, 1)>, #rudnn.size<1>, #rudnn.size<1>] block [64, 1, 1] shared 0
// CHECK-SAME: #rudnn.param<"input" : "const rudnn::bf16*" = buffer(0)>, #rudnn.param<"slots" : "const rudnn::u32*" = buffer(1)>,
// CHECK-SAME: #rudnn.param<"rows" : "rudnn::bf16*" = buffer(2)>, #rudnn.param<"assignments" : "long long" = size(rows(1) * dim(1, 1))>,
// CHECK-SAME: #rudnn.param<"top_k" : "long long" = size(8)>, #rudnn.param<"hidden" : "long long" = size(64)>]
// CHECK: return %[[ROWS]], %[[RANK]]#0, %[[RANK]]#1
func.func @dispatch(%x: tensor<?x64xbf16>, %i: tensor<?x8xui32>) -> (tensor<?x64xbf16>, tensor<257xui32>, tensor<?x8xui32>) {
  %rows, %offsets, %slots = rudnn.dispatch %x, %i {experts = 256 : i64,
           kernel_config = {rank_threads = 1024, threads = 64, vector_width = 8}}
           : tensor<?x64xbf16>, tensor<?x8xui32> -> tensor<?x64xbf16>, tensor<257xui32>, tensor<?x8xui32>
  return %rows, %offsets, %slots : tensor<?x64xbf16>, tensor<257xui32>, tensor<?x8xui32>
}

// 8 experts: (8 + 1) × 4 = 36 → 48 bytes of counters.
// CHECK-LABEL: func.func @dispatch_f32
// CHECK: rudnn.launch @rudnn_dispatch_rank_t256(
// CHECK-SAME: block [256, 1, 1] shared 48
// CHECK: rudnn.launch @rudnn_dispatch_scatter_f32_t256_v4(
// CHECK-SAME: args ["float", "rudnn::moe::RowCopyPolicy<256, 4>"]
// CHECK-SAME: block [256, 1, 1] shared 0
// CHECK-SAME: #rudnn.param<"top_k" : "long long" = size(2)>, #rudnn.param<"hidden" : "long long" = size(4100)>]
func.func @dispatch_f32(%x: tensor<?x4100xf32>, %i: tensor<?x2xui32>) -> (tensor<?x4100xf32>, tensor<9xui32>, tensor<?x2xui32>) {
  %rows, %offsets, %slots = rudnn.dispatch %x, %i {experts = 8 : i64,
           kernel_config = {rank_threads = 256, threads = 256, vector_width = 4}}
           : tensor<?x4100xf32>, tensor<?x2xui32> -> tensor<?x4100xf32>, tensor<9xui32>, tensor<?x2xui32>
  return %rows, %offsets, %slots : tensor<?x4100xf32>, tensor<9xui32>, tensor<?x2xui32>
}
