// The convolution ops parse, verify and print back (SPEC §6): 1-D, 2-D and 3-D, channels-first and
// channels-last, grouped, with and without bias, each direction, each strategy.
// RUN: rudnn-opt %s | rudnn-opt | FileCheck %s

// CHECK-LABEL: func.func @forward_nhwc
// CHECK: rudnn.conv_forward %{{.*}}, %{{.*}} bias(%{{.*}} : tensor<64xf32>) {channels_last = true, dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1>, strategy = "implicit_gemm", stride = array<i64: 1, 1>} : tensor<?x56x56x64xbf16>, tensor<64x3x3x64xbf16> -> tensor<?x56x56x64xbf16>
func.func @forward_nhwc(%x: tensor<?x56x56x64xbf16>, %w: tensor<64x3x3x64xbf16>, %b: tensor<64xf32>) -> tensor<?x56x56x64xbf16> {
  %y = rudnn.conv_forward %x, %w bias(%b : tensor<64xf32>) {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>,
         dilation = array<i64: 1, 1>, groups = 1, channels_last = true, strategy = "implicit_gemm"}
       : tensor<?x56x56x64xbf16>, tensor<64x3x3x64xbf16> -> tensor<?x56x56x64xbf16>
  return %y : tensor<?x56x56x64xbf16>
}

// Channels-first, stride 2, grouped (groups 2): out = (15 + 2 - 2 - 1) / 2 + 1 = 8.
// CHECK-LABEL: func.func @forward_nchw_grouped
// CHECK: rudnn.conv_forward %{{.*}}, %{{.*}} {channels_last = false, {{.*}}groups = 2 : i64{{.*}}} : tensor<2x8x15x15xf32>, tensor<6x4x3x3xf32> -> tensor<2x6x8x8xf32>
func.func @forward_nchw_grouped(%x: tensor<2x8x15x15xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x8x8xf32> {
  %y = rudnn.conv_forward %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>,
         groups = 2, channels_last = false, strategy = "direct"} : tensor<2x8x15x15xf32>, tensor<6x4x3x3xf32> -> tensor<2x6x8x8xf32>
  return %y : tensor<2x6x8x8xf32>
}

// 1-D with defaults (empty option lists) and 3-D data backward.
// CHECK-LABEL: func.func @one_d_and_three_d
// CHECK: rudnn.conv_forward {{.*}} : tensor<1x4x10xf16>, tensor<8x4x4xf16> -> tensor<1x8x7xf16>
// CHECK: rudnn.conv_data_backward {{.*}} : tensor<?x8x6x6x16xbf16>, tensor<16x3x3x3x4xbf16> -> tensor<?x8x6x6x4xbf16>
func.func @one_d_and_three_d(%x: tensor<1x4x10xf16>, %w: tensor<8x4x4xf16>, %dy: tensor<?x8x6x6x16xbf16>,
                             %w3: tensor<16x3x3x3x4xbf16>) -> (tensor<1x8x7xf16>, tensor<?x8x6x6x4xbf16>) {
  %y = rudnn.conv_forward %x, %w {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 1,
         channels_last = false, strategy = "autotune"} : tensor<1x4x10xf16>, tensor<8x4x4xf16> -> tensor<1x8x7xf16>
  %dx = rudnn.conv_data_backward %dy, %w3 {stride = array<i64: 1, 1, 1>, padding = array<i64: 1, 1, 1>,
          dilation = array<i64: 1, 1, 1>, groups = 1, channels_last = true, strategy = "direct"}
        : tensor<?x8x6x6x16xbf16>, tensor<16x3x3x3x4xbf16> -> tensor<?x8x6x6x4xbf16>
  return %y, %dx : tensor<1x8x7xf16>, tensor<?x8x6x6x4xbf16>
}

// Weight backward with the bias gradient.
// CHECK-LABEL: func.func @weight_backward
// CHECK: rudnn.conv_weight_backward {{.*}}bias_grad{{.*}} : tensor<4x3x9x9xf32>, tensor<4x8x9x9xf32> -> tensor<8x3x3x3xf32>, tensor<8xf32>
func.func @weight_backward(%x: tensor<4x3x9x9xf32>, %dy: tensor<4x8x9x9xf32>) -> (tensor<8x3x3x3xf32>, tensor<8xf32>) {
  %dw, %db = rudnn.conv_weight_backward %x, %dy {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>,
               dilation = array<i64: 1, 1>, groups = 1, channels_last = false, strategy = "implicit_gemm", bias_grad}
             : tensor<4x3x9x9xf32>, tensor<4x8x9x9xf32> -> tensor<8x3x3x3xf32>, tensor<8xf32>
  return %dw, %db : tensor<8x3x3x3xf32>, tensor<8xf32>
}
