// rudnn-select-kernel-config on the convolution ops (conv_config::heuristicChoice). Strategy
// "direct": the direct kernel, or the depthwise ones for a depthwise call (any direction). "implicit_gemm" (and
// "autotune" without a tuned answer): the implicit GEMM — tensor cores for f16/bf16 where the target
// has mma.sync, the 128x128 tile when the GEMM has >= 128 columns, else 64x64 — except the guide's
// substitutions: grouped and 3-D f32 run Direct. The weight backward's reduction is split to fill
// ~264 blocks (<= 32 splits, >= 256 rows each, batch 8 assumed when dynamic); a forward or data
// backward whose output tiles fill fewer than 132 blocks is split-K to ~264 (>= 8 K blocks each),
// sized for the batch's power-of-two bucket, never when the batch is dynamic. Only kernels within the
// target's shared memory: a depthwise call whose halo no depthwise tile fits runs the direct kernel.
// RUN: rudnn-opt %s --rudnn-select-kernel-config | FileCheck %s
// RUN: rudnn-opt %s --rudnn-select-kernel-config="arch=sm_75" | FileCheck %s --check-prefix=TURING
// RUN: rudnn-opt %s --rudnn-select-kernel-config="arch=sm_86 max-shared-bytes=101376" | FileCheck %s --check-prefix=SM86

// ResNet 3x3, 64 -> 64 channels: 64 GEMM columns, the 64x64 tensor-core tile; on sm_75 the plain one.
// CHECK-LABEL: func.func @resnet_bf16
// CHECK: kernel_config = {algorithm = 2 : i64, bk = 32 : i64, bm = 64 : i64, bn = 64 : i64, splits = 1 : i64, stages = 4 : i64, tensor_core = 1 : i64, warps_m = 2 : i64, warps_n = 2 : i64}
// TURING-LABEL: func.func @resnet_bf16
// TURING: kernel_config = {algorithm = 2 : i64, bk = 16 : i64, bm = 64 : i64, bn = 64 : i64, splits = 1 : i64, stages = 3 : i64, tensor_core = 0 : i64, warps_m = 2 : i64, warps_n = 4 : i64}
func.func @resnet_bf16(%x: tensor<?x56x56x64xbf16>, %w: tensor<64x3x3x64xbf16>) -> tensor<?x56x56x64xbf16> {
  %y = rudnn.conv_forward %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>,
         groups = 1, channels_last = true, strategy = "implicit_gemm"} : tensor<?x56x56x64xbf16>, tensor<64x3x3x64xbf16> -> tensor<?x56x56x64xbf16>
  return %y : tensor<?x56x56x64xbf16>
}

// 256 output channels: the 128x128 tile.
// CHECK-LABEL: func.func @wide_bf16
// CHECK: kernel_config = {algorithm = 2 : i64, bk = 32 : i64, bm = 128 : i64, bn = 128 : i64, splits = 1 : i64, stages = 3 : i64, tensor_core = 1 : i64, warps_m = 2 : i64, warps_n = 4 : i64}
func.func @wide_bf16(%x: tensor<?x14x14x256xbf16>, %w: tensor<256x3x3x256xbf16>) -> tensor<?x14x14x256xbf16> {
  %y = rudnn.conv_forward %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>,
         groups = 1, channels_last = true, strategy = "autotune"} : tensor<?x14x14x256xbf16>, tensor<256x3x3x256xbf16> -> tensor<?x14x14x256xbf16>
  return %y : tensor<?x14x14x256xbf16>
}

// ResNet's 7x7x512 3x3 stage at batch 32: 13 x 4 tiles of 128x128 fill 52 blocks, so the 144 K blocks
// are split 5 ways (260 blocks); batch 33 counts as its bucket, 64 (104 tiles: 2 splits); batch
// 64 likewise; a dynamic batch is not split, unless its rudnn.batch_hint (what lower_conv sets to
// the call's batch) names one (a hint past any real batch saturates: many tiles, no split). The data
// backward splits alike.
// CHECK-LABEL: func.func @split_k
// CHECK: conv_forward {{.*}}kernel_config = {algorithm = 2 : i64, bk = 32 : i64, bm = 128 : i64, bn = 128 : i64, splits = 5 : i64,
// CHECK: conv_forward {{.*}}kernel_config = {algorithm = 2 : i64, bk = 32 : i64, bm = 128 : i64, bn = 128 : i64, splits = 2 : i64,
// CHECK: conv_forward {{.*}}kernel_config = {algorithm = 2 : i64, bk = 32 : i64, bm = 128 : i64, bn = 128 : i64, splits = 2 : i64,
// CHECK: conv_forward {{.*}}kernel_config = {algorithm = 2 : i64, bk = 32 : i64, bm = 128 : i64, bn = 128 : i64, splits = 1 : i64,
// CHECK: conv_forward {{.*}}kernel_config = {algorithm = 2 : i64, bk = 32 : i64, bm = 128 : i64, bn = 128 : i64, splits = 5 : i64,
// CHECK: conv_forward {{.*}}kernel_config = {algorithm = 2 : i64, bk = 32 : i64, bm = 128 : i64, bn = 128 : i64, splits = 1 : i64,
// CHECK: conv_data_backward {{.*}}kernel_config = {algorithm = 2 : i64, bk = 32 : i64, bm = 128 : i64, bn = 128 : i64, splits = 5 : i64,
func.func @split_k(%x32: tensor<32x7x7x512xbf16>, %x33: tensor<33x7x7x512xbf16>, %x64: tensor<64x7x7x512xbf16>,
                   %xn: tensor<?x7x7x512xbf16>, %w: tensor<512x3x3x512xbf16>)
    -> (tensor<32x7x7x512xbf16>, tensor<33x7x7x512xbf16>, tensor<64x7x7x512xbf16>, tensor<?x7x7x512xbf16>,
        tensor<?x7x7x512xbf16>, tensor<?x7x7x512xbf16>, tensor<32x7x7x512xbf16>) {
  %a = rudnn.conv_forward %x32, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>,
         groups = 1, channels_last = true, strategy = "implicit_gemm"} : tensor<32x7x7x512xbf16>, tensor<512x3x3x512xbf16> -> tensor<32x7x7x512xbf16>
  %b = rudnn.conv_forward %x33, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>,
         groups = 1, channels_last = true, strategy = "implicit_gemm"} : tensor<33x7x7x512xbf16>, tensor<512x3x3x512xbf16> -> tensor<33x7x7x512xbf16>
  %c = rudnn.conv_forward %x64, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>,
         groups = 1, channels_last = true, strategy = "implicit_gemm"} : tensor<64x7x7x512xbf16>, tensor<512x3x3x512xbf16> -> tensor<64x7x7x512xbf16>
  %d = rudnn.conv_forward %xn, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>,
         groups = 1, channels_last = true, strategy = "implicit_gemm"} : tensor<?x7x7x512xbf16>, tensor<512x3x3x512xbf16> -> tensor<?x7x7x512xbf16>
  %h = rudnn.conv_forward %xn, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>,
         groups = 1, channels_last = true, strategy = "autotune", rudnn.batch_hint = 32 : i64} : tensor<?x7x7x512xbf16>, tensor<512x3x3x512xbf16> -> tensor<?x7x7x512xbf16>
  %huge = rudnn.conv_forward %xn, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>,
         groups = 1, channels_last = true, strategy = "implicit_gemm", rudnn.batch_hint = 9223372036854775807 : i64} : tensor<?x7x7x512xbf16>, tensor<512x3x3x512xbf16> -> tensor<?x7x7x512xbf16>
  %e = rudnn.conv_data_backward %x32, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>,
         groups = 1, channels_last = true, strategy = "implicit_gemm"} : tensor<32x7x7x512xbf16>, tensor<512x3x3x512xbf16> -> tensor<32x7x7x512xbf16>
  return %a, %b, %c, %d, %h, %huge, %e : tensor<32x7x7x512xbf16>, tensor<33x7x7x512xbf16>, tensor<64x7x7x512xbf16>,
                                        tensor<?x7x7x512xbf16>, tensor<?x7x7x512xbf16>, tensor<?x7x7x512xbf16>,
                                        tensor<32x7x7x512xbf16>
}

// Grouped with ImplicitGemm: Direct (256 threads). Depthwise with Direct: the depthwise kernel.
// CHECK-LABEL: func.func @grouped_and_depthwise
// CHECK: kernel_config = {algorithm = 0 : i64, threads = 256 : i64}
// CHECK: kernel_config = {algorithm = 1 : i64, channels = 32 : i64, tile_h = 8 : i64, tile_w = 8 : i64}
func.func @grouped_and_depthwise(%x: tensor<2x8x16x16xbf16>, %w: tensor<8x4x3x3xbf16>, %wd: tensor<8x1x3x3xbf16>)
    -> (tensor<2x8x16x16xbf16>, tensor<2x8x16x16xbf16>) {
  %y = rudnn.conv_forward %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>,
         groups = 2, channels_last = false, strategy = "implicit_gemm"} : tensor<2x8x16x16xbf16>, tensor<8x4x3x3xbf16> -> tensor<2x8x16x16xbf16>
  %z = rudnn.conv_forward %x, %wd {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>,
         groups = 8, channels_last = false, strategy = "direct"} : tensor<2x8x16x16xbf16>, tensor<8x1x3x3xbf16> -> tensor<2x8x16x16xbf16>
  return %y, %z : tensor<2x8x16x16xbf16>, tensor<2x8x16x16xbf16>
}

// 3-D f32 with ImplicitGemm: Direct.
// CHECK-LABEL: func.func @three_d_f32
// CHECK: kernel_config = {algorithm = 0 : i64, threads = 256 : i64}
func.func @three_d_f32(%x: tensor<1x4x8x8x8xf32>, %w: tensor<4x4x3x3x3xf32>) -> tensor<1x4x6x6x6xf32> {
  %y = rudnn.conv_forward %x, %w {stride = array<i64>, padding = array<i64>, dilation = array<i64>,
         groups = 1, channels_last = false, strategy = "implicit_gemm"} : tensor<1x4x8x8x8xf32>, tensor<4x4x3x3x3xf32> -> tensor<1x4x6x6x6xf32>
  return %y : tensor<1x4x6x6x6xf32>
}

// Weight backward, 64 -> 64 3x3 at 56x56: 576 columns (the 128x128 tile, 5 tiles), split 32 ways.
// CHECK-LABEL: func.func @weight_backward
// CHECK: kernel_config = {algorithm = 2 : i64, bk = 32 : i64, bm = 128 : i64, bn = 128 : i64, splits = 32 : i64, stages = 3 : i64, tensor_core = 1 : i64, warps_m = 2 : i64, warps_n = 4 : i64}
func.func @weight_backward(%x: tensor<?x56x56x64xbf16>, %dy: tensor<?x56x56x64xbf16>) -> tensor<64x3x3x64xbf16> {
  %dw = rudnn.conv_weight_backward %x, %dy {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>,
          dilation = array<i64: 1, 1>, groups = 1, channels_last = true, strategy = "implicit_gemm"}
        : tensor<?x56x56x64xbf16>, tensor<?x56x56x64xbf16> -> tensor<64x3x3x64xbf16>
  return %dw : tensor<64x3x3x64xbf16>
}

// Depthwise data backward with Direct and weight backward with ImplicitGemm (grouped: substituted to
// Direct, which is the depthwise kernel): 512 channels in 16 chunks of 32, split 264 / 16 = 16 ways
// (25088 rows with the assumed batch 8; 16 × 512 × 9 floats of workspace).
// CHECK-LABEL: func.func @depthwise_backward
// CHECK: kernel_config = {algorithm = 1 : i64, channels = 32 : i64, tile_h = 8 : i64, tile_w = 8 : i64}
// CHECK: kernel_config = {algorithm = 1 : i64, channels = 32 : i64, splits = 16 : i64, tile_h = 8 : i64, tile_w = 8 : i64}
func.func @depthwise_backward(%x: tensor<?x56x56x512xbf16>, %dy: tensor<?x56x56x512xbf16>, %w: tensor<512x3x3x1xbf16>)
    -> (tensor<?x56x56x512xbf16>, tensor<512x3x3x1xbf16>) {
  %dx = rudnn.conv_data_backward %dy, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>,
          dilation = array<i64: 1, 1>, groups = 512, channels_last = true, strategy = "direct"}
        : tensor<?x56x56x512xbf16>, tensor<512x3x3x1xbf16> -> tensor<?x56x56x512xbf16>
  %dw = rudnn.conv_weight_backward %x, %dy {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>,
          dilation = array<i64: 1, 1>, groups = 512, channels_last = true, strategy = "implicit_gemm"}
        : tensor<?x56x56x512xbf16>, tensor<?x56x56x512xbf16> -> tensor<512x3x3x1xbf16>
  return %dx, %dw : tensor<?x56x56x512xbf16>, tensor<512x3x3x1xbf16>
}

// Depthwise 7x7 f32 with dilation: stride 2, dilation 3 stages a 33x33 halo of 32 channels (139 KB),
// within sm_90's 227 KiB but not sm_86's 99 KiB (the direct kernel there); stride 1, dilation 6 a 44x44
// one (248 KB), more than any target: the direct kernel everywhere.
// CHECK-LABEL: func.func @depthwise_dilated
// CHECK: kernel_config = {algorithm = 1 : i64, channels = 32 : i64, tile_h = 8 : i64, tile_w = 8 : i64}
// CHECK: kernel_config = {algorithm = 0 : i64, threads = 256 : i64}
// SM86-LABEL: func.func @depthwise_dilated
// SM86: kernel_config = {algorithm = 0 : i64, threads = 256 : i64}
// SM86: kernel_config = {algorithm = 0 : i64, threads = 256 : i64}
func.func @depthwise_dilated(%x: tensor<1x8x21x20xf32>, %w: tensor<8x1x7x7xf32>, %xw: tensor<1x8x46x45xf32>)
    -> (tensor<1x8x5x4xf32>, tensor<1x8x16x15xf32>) {
  %y = rudnn.conv_forward %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 3, 3>, dilation = array<i64: 3, 3>,
         groups = 8, channels_last = false, strategy = "direct"} : tensor<1x8x21x20xf32>, tensor<8x1x7x7xf32> -> tensor<1x8x5x4xf32>
  %z = rudnn.conv_forward %xw, %w {stride = array<i64: 1, 1>, padding = array<i64: 3, 3>, dilation = array<i64: 6, 6>,
         groups = 8, channels_last = false, strategy = "direct"} : tensor<1x8x46x45xf32>, tensor<8x1x7x7xf32> -> tensor<1x8x16x15xf32>
  return %y, %z : tensor<1x8x5x4xf32>, tensor<1x8x16x15xf32>
}

// Images past the tiled kernels' 32-bit indexing (2^30 input pixels here, a 1-D sequence): the
// depthwise call runs the direct kernel, and the implicit GEMM is substituted by Direct.
// CHECK-LABEL: func.func @huge_image_depthwise
// CHECK: kernel_config = {algorithm = 0 : i64, threads = 256 : i64}
func.func @huge_image_depthwise(%x: tensor<?x1073741824x8xbf16>, %w: tensor<8x3x1xbf16>) -> tensor<?x1073741824x8xbf16> {
  %y = rudnn.conv_forward %x, %w {stride = array<i64: 1>, padding = array<i64: 1>, dilation = array<i64: 1>,
         groups = 8, channels_last = true, strategy = "direct"} : tensor<?x1073741824x8xbf16>, tensor<8x3x1xbf16> -> tensor<?x1073741824x8xbf16>
  return %y : tensor<?x1073741824x8xbf16>
}
// CHECK-LABEL: func.func @huge_image_gemm
// CHECK: kernel_config = {algorithm = 0 : i64, threads = 256 : i64}
func.func @huge_image_gemm(%x: tensor<?x1073741824x8xbf16>, %w: tensor<16x3x8xbf16>) -> tensor<?x1073741824x16xbf16> {
  %y = rudnn.conv_forward %x, %w {stride = array<i64: 1>, padding = array<i64: 1>, dilation = array<i64: 1>,
         groups = 1, channels_last = true, strategy = "implicit_gemm"} : tensor<?x1073741824x8xbf16>, tensor<16x3x8xbf16> -> tensor<?x1073741824x16xbf16>
  return %y : tensor<?x1073741824x16xbf16>
}
// A filter past the implicit GEMM's 32-bit column count (5 taps x 2^28 channels >= 2^30): Direct.
// CHECK-LABEL: func.func @huge_filter_gemm
// CHECK: kernel_config = {algorithm = 0 : i64, threads = 256 : i64}
func.func @huge_filter_gemm(%x: tensor<?x8x268435456xbf16>, %w: tensor<8x5x268435456xbf16>) -> tensor<?x8x8xbf16> {
  %y = rudnn.conv_forward %x, %w {stride = array<i64: 1>, padding = array<i64: 2>, dilation = array<i64: 1>,
         groups = 1, channels_last = true, strategy = "implicit_gemm"} : tensor<?x8x268435456xbf16>, tensor<8x5x268435456xbf16> -> tensor<?x8x8xbf16>
  return %y : tensor<?x8x8xbf16>
}
// The same bound counts C as the kernels see it, rounded up to whole 16-byte vectors: a 64^3 filter
// (2^18 taps, the largest kernel) with C = 4095 (bf16) is 2^18 x 4096 = 2^30 columns there: Direct.
// CHECK-LABEL: func.func @huge_filter_padded_channels
// CHECK: kernel_config = {algorithm = 0 : i64, threads = 256 : i64}
func.func @huge_filter_padded_channels(%x: tensor<?x64x64x64x4095xbf16>, %w: tensor<1x64x64x64x4095xbf16>) -> tensor<?x1x1x1x1xbf16> {
  %y = rudnn.conv_forward %x, %w {stride = array<i64: 1, 1, 1>, padding = array<i64: 0, 0, 0>, dilation = array<i64: 1, 1, 1>,
         groups = 1, channels_last = true, strategy = "implicit_gemm"} : tensor<?x64x64x64x4095xbf16>, tensor<1x64x64x64x4095xbf16> -> tensor<?x1x1x1x1xbf16>
  return %y : tensor<?x1x1x1x1xbf16>
}
