// rudnn-select-kernel-config on the routing ops (one warp per token row): rows_per_block = 4, or 2
// for grouped routing over more than 512 experts (its shared memory grows with the experts). A
// config already attached is kept.
// RUN: rudnn-opt %s --rudnn-select-kernel-config | FileCheck %s

// CHECK-LABEL: func.func @route
// CHECK: rudnn.route %{{.*}} {kernel_config = {rows_per_block = 4 : i64}
func.func @route(%l: tensor<?x64xbf16>) -> (tensor<?x8xui32>, tensor<?x8xbf16>) {
  %i, %w = rudnn.route %l {top_k = 8 : i64, renormalize = true} : tensor<?x64xbf16> -> tensor<?x8xui32>, tensor<?x8xbf16>
  return %i, %w : tensor<?x8xui32>, tensor<?x8xbf16>
}

// 256 experts: still four rows per block.
// CHECK-LABEL: func.func @grouped
// CHECK: rudnn.route_sigmoid_grouped {{.*}}kernel_config = {rows_per_block = 4 : i64}
func.func @grouped(%l: tensor<?x256xbf16>, %b: tensor<256xf32>) -> (tensor<?x8xui32>, tensor<?x8xbf16>) {
  %i, %w = rudnn.route_sigmoid_grouped %l, %b {top_k = 8 : i64, groups = 8 : i64,
             selected_groups = 4 : i64, group_top_two = true, renormalize = true, scale = 2.5 : f32}
           : tensor<?x256xbf16>, tensor<256xf32> -> tensor<?x8xui32>, tensor<?x8xbf16>
  return %i, %w : tensor<?x8xui32>, tensor<?x8xbf16>
}

// 1024 experts > 512: two rows per block.
// CHECK-LABEL: func.func @grouped_wide
// CHECK: rudnn.route_sigmoid_grouped {{.*}}kernel_config = {rows_per_block = 2 : i64}
func.func @grouped_wide(%l: tensor<?x1024xf32>) -> (tensor<?x8xui32>, tensor<?x8xf32>) {
  %i, %w = rudnn.route_sigmoid_grouped %l {top_k = 8 : i64, groups = 8 : i64,
             selected_groups = 4 : i64, group_top_two = false, renormalize = false, scale = 1.0 : f32}
           : tensor<?x1024xf32> -> tensor<?x8xui32>, tensor<?x8xf32>
  return %i, %w : tensor<?x8xui32>, tensor<?x8xf32>
}

// The softmax router over 1024 experts keeps four rows (no per-expert shared memory).
// CHECK-LABEL: func.func @route_wide
// CHECK: rudnn.route %{{.*}} {kernel_config = {rows_per_block = 4 : i64}
func.func @route_wide(%l: tensor<?x1024xf32>) -> (tensor<?x8xui32>, tensor<?x8xf32>) {
  %i, %w = rudnn.route %l {top_k = 8 : i64, renormalize = false} : tensor<?x1024xf32> -> tensor<?x8xui32>, tensor<?x8xf32>
  return %i, %w : tensor<?x8xui32>, tensor<?x8xf32>
}

// CHECK-LABEL: func.func @forced
// CHECK: kernel_config = {rows_per_block = 8 : i64}
func.func @forced(%l: tensor<?x64xbf16>) -> (tensor<?x8xui32>, tensor<?x8xbf16>) {
  %i, %w = rudnn.route %l {top_k = 8 : i64, renormalize = true, kernel_config = {rows_per_block = 8}}
           : tensor<?x64xbf16> -> tensor<?x8xui32>, tensor<?x8xbf16>
  return %i, %w : tensor<?x8xui32>, tensor<?x8xbf16>
}
