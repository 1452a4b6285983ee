// rudnn-select-kernel-config on rudnn.dispatch: the scatter's row copy takes the widest legal vector
// (16 bytes when h allows), then min(256, max(64, next_pow2(ceil(h / vector_width)))) threads; the
// ranking block (rank_threads) is as wide as the target allows, up to 1024.
// RUN: rudnn-opt %s --rudnn-select-kernel-config | FileCheck %s
// RUN: rudnn-opt %s --rudnn-select-kernel-config="max-threads-per-block=512" | FileCheck %s --check-prefix=LIMIT

// bf16 rows of 64: 8-element vectors, 8 vectors per row → the 64-thread floor.
// CHECK-LABEL: func.func @bf16_64
// CHECK: rudnn.dispatch {{.*}}kernel_config = {rank_threads = 1024 : i64, threads = 64 : i64, vector_width = 8 : i64}
// LIMIT-LABEL: func.func @bf16_64
// LIMIT: kernel_config = {rank_threads = 512 : i64, threads = 64 : i64, vector_width = 8 : i64}
func.func @bf16_64(%x: tensor<?x64xbf16>, %i: tensor<?x8xui32>) -> (tensor<?x64xbf16>, tensor<257xui32>, tensor<?x8xui32>) {
  %rows, %offsets, %slots = rudnn.dispatch %x, %i {experts = 256 : i64}
           : tensor<?x64xbf16>, tensor<?x8xui32> -> tensor<?x64xbf16>, tensor<257xui32>, tensor<?x8xui32>
  return %rows, %offsets, %slots : tensor<?x64xbf16>, tensor<257xui32>, tensor<?x8xui32>
}

// f32 rows of 4100 (divisible by 4 only): 4-element vectors, 1025 vectors → the 256-thread cap.
// CHECK-LABEL: func.func @f32_4100
// CHECK: kernel_config = {rank_threads = 1024 : i64, threads = 256 : i64, vector_width = 4 : i64}
func.func @f32_4100(%x: tensor<?x4100xf32>, %i: tensor<?x2xui32>) -> (tensor<?x4100xf32>, tensor<9xui32>, tensor<?x2xui32>) {
  %rows, %offsets, %slots = rudnn.dispatch %x, %i {experts = 8 : i64}
           : tensor<?x4100xf32>, tensor<?x2xui32> -> tensor<?x4100xf32>, tensor<9xui32>, tensor<?x2xui32>
  return %rows, %offsets, %slots : tensor<?x4100xf32>, tensor<9xui32>, tensor<?x2xui32>
}

// f16 rows of 200 (divisible by 8): 8-element vectors, 25 vectors → 64 threads.
// CHECK-LABEL: func.func @f16_200
// CHECK: kernel_config = {rank_threads = 1024 : i64, threads = 64 : i64, vector_width = 8 : i64}
func.func @f16_200(%x: tensor<?x200xf16>, %i: tensor<?x1xui32>) -> (tensor<?x200xf16>, tensor<5xui32>, tensor<?x1xui32>) {
  %rows, %offsets, %slots = rudnn.dispatch %x, %i {experts = 4 : i64}
           : tensor<?x200xf16>, tensor<?x1xui32> -> tensor<?x200xf16>, tensor<5xui32>, tensor<?x1xui32>
  return %rows, %offsets, %slots : tensor<?x200xf16>, tensor<5xui32>, tensor<?x1xui32>
}

// CHECK-LABEL: func.func @forced
// CHECK: kernel_config = {rank_threads = 256 : i64, threads = 128 : i64, vector_width = 2 : i64}
func.func @forced(%x: tensor<?x64xbf16>, %i: tensor<?x8xui32>) -> (tensor<?x64xbf16>, tensor<257xui32>, tensor<?x8xui32>) {
  %rows, %offsets, %slots = rudnn.dispatch %x, %i {experts = 256 : i64,
           kernel_config = {rank_threads = 256, threads = 128, vector_width = 2}}
           : tensor<?x64xbf16>, tensor<?x8xui32> -> tensor<?x64xbf16>, tensor<257xui32>, tensor<?x8xui32>
  return %rows, %offsets, %slots : tensor<?x64xbf16>, tensor<257xui32>, tensor<?x8xui32>
}
