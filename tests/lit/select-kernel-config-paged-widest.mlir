// rudnn-select-kernel-config on paged attention with the widest dims, D = Dv = 1024 (f32, group 4),
// against the target's shared memory: 4 rows × 32 lanes of 32-key tiles need 279680 bytes, so the
// 16-key tile of 4 rows × 16 lanes (148096 bytes) on sm_80 and sm_90; sm_86 / sm_89 (99 KiB) fit no
// tile at these dims (2 rows still need 139712 bytes): the pass fails naming the limit, and the ops
// layer refuses such a call as Unsupported before lowering.
// RUN: rudnn-opt %s --rudnn-select-kernel-config | FileCheck %s
// RUN: rudnn-opt %s --rudnn-select-kernel-config="arch=sm_80 max-shared-bytes=166912" | FileCheck %s
// RUN: rudnn-opt %s --rudnn-select-kernel-config="arch=sm_75" | FileCheck %s
// RUN: not rudnn-opt %s --rudnn-select-kernel-config="arch=sm_86 max-shared-bytes=101376" 2>&1 | FileCheck %s --check-prefix=SM86

// CHECK-LABEL: func.func @widest_dims
// CHECK: kernel_config = {block_keys = 16 : i64, block_rows = 4 : i64, max_value_dim = 1024 : i64, row_lanes = 16 : i64, tensor_core = 0 : i64}
// SM86: error: 'rudnn.paged_attention' op has no tile for key dim 1024 value dim 1024 within the target's 101376 bytes of shared memory
func.func @widest_dims(%q: tensor<?x8x1024xf32>, %k: tensor<?x16x2x1024xf32>, %v: tensor<?x16x2x1024xf32>,
                       %table: tensor<?x?xi32>, %lengths: tensor<?xi32>, %seq: tensor<?xi32>, %pos: tensor<?xi32>)
    -> tensor<?x8x1024xf32> {
  %o = rudnn.paged_attention %q, %k, %v, %table, %lengths, %seq, %pos {scale = 0.03125 : f32, causal = true, splits = 1}
       : tensor<?x8x1024xf32>, tensor<?x16x2x1024xf32>, tensor<?x16x2x1024xf32>, tensor<?x?xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32> -> tensor<?x8x1024xf32>
  return %o : tensor<?x8x1024xf32>
}
