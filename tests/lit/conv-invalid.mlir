// Every convolution contract line (SPEC §6) the IR can express is rejected by the verifier with the
// message of rudnn::contracts::check_conv; plus result types, strategy and kernel_config.
// RUN: rudnn-opt %s -split-input-file -verify-diagnostics

func.func @input_dtype(%x: tensor<1x4x8x8xi32>, %w: tensor<4x4x3x3xi32>) {
  // expected-error @+1 {{input: expected f32, f16 or bf16, got i32}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 1, channels_last = false, strategy = "direct"} : tensor<1x4x8x8xi32>, tensor<4x4x3x3xi32> -> tensor<1x4x6x6xi32>
  return
}

// -----

func.func @quantized(%x: tensor<1x4x8x8xf8E4M3FN>, %w: tensor<4x4x3x3xf8E4M3FN>) {
  // expected-error @+1 {{input: expected non-quantized f32, f16 or bf16, got}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 1, channels_last = false, strategy = "direct"} : tensor<1x4x8x8xf8E4M3FN>, tensor<4x4x3x3xf8E4M3FN> -> tensor<1x4x6x6xf8E4M3FN>
  return
}

// -----

func.func @weight_dtype(%x: tensor<1x4x8x8xbf16>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{weight: expected bf16 (the input dtype), got f32}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 1, channels_last = false, strategy = "direct"} : tensor<1x4x8x8xbf16>, tensor<4x4x3x3xf32> -> tensor<1x4x6x6xbf16>
  return
}

// -----

func.func @rank(%x: tensor<1x4xf32>, %w: tensor<4x4xf32>) {
  // expected-error @+1 {{input: expected rank 3, 4 or 5 [N, C, spatial...]}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 1, channels_last = false, strategy = "direct"} : tensor<1x4xf32>, tensor<4x4xf32> -> tensor<1x4xf32>
  return
}

// -----

func.func @weight_rank(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3xf32>) {
  // expected-error @+1 {{weight: expected rank 4 [O, C/groups, k...]}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 1, channels_last = false, strategy = "direct"} : tensor<1x4x8x8xf32>, tensor<4x4x3xf32> -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @groups_divide(%x: tensor<1x6x8x8xf32>, %w: tensor<4x1x3x3xf32>) {
  // expected-error @+1 {{groups: expected a divisor of the input channels 6, got 4}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 4, channels_last = false, strategy = "direct"} : tensor<1x6x8x8xf32>, tensor<4x1x3x3xf32> -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @out_groups(%x: tensor<1x6x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{groups: expected a divisor of the output channels 4, got 3}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 3, channels_last = false, strategy = "direct"} : tensor<1x6x8x8xf32>, tensor<4x2x3x3xf32> -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @weight_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{weight: expected 4 channels per group (C 4 / groups 1)}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 1, channels_last = false, strategy = "direct"} : tensor<1x4x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @stride_count(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{stride: expected 2 entries (one per spatial dim) or none, got [1]}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64: 1>, padding = array<i64>, dilation = array<i64>, groups = 1, channels_last = false, strategy = "direct"} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @stride_zero(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{stride: expected every entry in 1..=1048576, got [1, 0]}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64: 1, 0>, padding = array<i64>, dilation = array<i64>, groups = 1, channels_last = false, strategy = "direct"} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @padding_negative(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{padding: expected every entry in 0..=1048576, got [-1, 0]}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64>, padding = array<i64: -1, 0>, dilation = array<i64>, groups = 1, channels_last = false, strategy = "direct"} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @output_extent(%x: tensor<1x4x2x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{input: expected spatial dim 0 of at least dilation·(k − 1) + 1 − 2·padding = 3 (an output extent >= 1)}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 1, channels_last = false, strategy = "direct"} : tensor<1x4x2x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x1x6xf32>
  return
}

// -----

func.func @kernel_too_big(%x: tensor<1x4x80x8xf32>, %w: tensor<4x4x65x3xf32>) {
  // expected-error @+1 {{weight: expected kernel extents in 1..=64}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 1, channels_last = false, strategy = "direct"} : tensor<1x4x80x8xf32>, tensor<4x4x65x3xf32> -> tensor<1x4x16x6xf32>
  return
}

// -----

func.func @empty_channels(%x: tensor<1x0x8x8xf32>, %w: tensor<4x0x3x3xf32>) {
  // expected-error @+1 {{input: expected channels C > 0}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 1, channels_last = false, strategy = "direct"} : tensor<1x0x8x8xf32>, tensor<4x0x3x3xf32> -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @result_shape(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{output: expected [1, 4, 6, 6] of 'f32', got 'tensor<1x4x8x8xf32>'}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 1, channels_last = false, strategy = "direct"} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x8x8xf32>
  return
}
// -----

func.func @bias_dtype(%x: tensor<1x4x8x8xbf16>, %w: tensor<4x4x3x3xbf16>, %b: tensor<4xf16>) {
  // expected-error @+1 {{bias: expected f32 or bf16 (the input dtype), got f16}}
  %y = rudnn.conv_forward %x, %w bias(%b : tensor<4xf16>) {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 1, channels_last = false, strategy = "direct"} : tensor<1x4x8x8xbf16>, tensor<4x4x3x3xbf16> -> tensor<1x4x6x6xbf16>
  return
}

// -----

func.func @bias_shape(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %b: tensor<5xf32>) {
  // expected-error @+1 {{bias: expected [4] ([O], the weight's output channels), got [5]}}
  %y = rudnn.conv_forward %x, %w bias(%b : tensor<5xf32>) {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 1, channels_last = false, strategy = "direct"} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @strategy(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{strategy: expected "direct", "implicit_gemm" or "autotune", got "winograd"}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 1, channels_last = false, strategy = "winograd"} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x6x6xf32>
  return
}

// -----

// Data backward: grad_output must have the forward's output extents for grad_input's shape.
func.func @grad_output_shape(%dy: tensor<1x4x7x6xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{grad_output: expected [1, 4, 6, 6] ([N, O, out...] of the forward), got [1, 4, 7, 6]}}
  %dx = rudnn.conv_data_backward %dy, %w {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 1, channels_last = false, strategy = "direct"} : tensor<1x4x7x6xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @grad_weight_dtype(%x: tensor<1x4x8x8xf32>, %dy: tensor<1x4x6x6xf32>) {
  // expected-error @+1 {{grad_weight: expected the input element type 'f32', got 'tensor<4x4x3x3xbf16>'}}
  %dw = rudnn.conv_weight_backward %x, %dy {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 1, channels_last = false, strategy = "direct"} : tensor<1x4x8x8xf32>, tensor<1x4x6x6xf32> -> tensor<4x4x3x3xbf16>
  return
}

// -----

func.func @bias_grad_count(%x: tensor<1x4x8x8xf32>, %dy: tensor<1x4x6x6xf32>) {
  // expected-error @+1 {{expected 2 results (grad_weight, grad_bias), got 1}}
  %dw = rudnn.conv_weight_backward %x, %dy {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 1, channels_last = false, strategy = "direct", bias_grad} : tensor<1x4x8x8xf32>, tensor<1x4x6x6xf32> -> tensor<4x4x3x3xf32>
  return
}

// -----

func.func @tensor_core_f32(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{kernel_config: tensor_core = 1 needs f16 or bf16}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 1, channels_last = false, strategy = "implicit_gemm", kernel_config = {algorithm = 2, bm = 64, bn = 64, bk = 32, warps_m = 2, warps_n = 2, stages = 4, tensor_core = 1, splits = 1}} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @grouped_gemm(%x: tensor<1x4x8x8xbf16>, %w: tensor<4x2x3x3xbf16>) {
  // expected-error @+1 {{kernel_config: implicit GEMM serves groups = 1, got groups = 2}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 2, channels_last = false, strategy = "implicit_gemm", kernel_config = {algorithm = 2, bm = 64, bn = 64, bk = 32, warps_m = 2, warps_n = 2, stages = 4, tensor_core = 1, splits = 1}} : tensor<1x4x8x8xbf16>, tensor<4x2x3x3xbf16> -> tensor<1x4x6x6xbf16>
  return
}

// -----

func.func @depthwise_forward_split(%x: tensor<1x4x8x8xf32>, %w: tensor<4x1x3x3xf32>) {
  // expected-error @+1 {{kernel_config: splits = 1 outside the weight backward and the implicit GEMM, got 2}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 4, channels_last = false, strategy = "direct", kernel_config = {algorithm = 1, tile_h = 8, tile_w = 8, channels = 32, splits = 2}} : tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32> -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @depthwise_not_depthwise(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{kernel_config: the depthwise kernel needs groups = C > 1, got groups 1 with C 4}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 1, channels_last = false, strategy = "direct", kernel_config = {algorithm = 1, tile_h = 8, tile_w = 8, channels = 32}} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @unregistered(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{kernel_config: threads = 96 is not a registered direct tile (128, 256)}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 1, channels_last = false, strategy = "direct", kernel_config = {algorithm = 0, threads = 96}} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x6x6xf32>
  return
}

// -----

// A split forward's FP32 sums [splits, N·pixels, O]: 2 × 64·4096 × 64 × 4 bytes = 128 MiB.
func.func @splits_forward_workspace(%x: tensor<64x64x64x64xbf16>, %w: tensor<64x64x3x3xbf16>) {
  // expected-error @+1 {{kernel_config: a split workspace <= 67108864 bytes, got 134217728 bytes (2 splits)}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1, channels_last = false, strategy = "implicit_gemm", kernel_config = {algorithm = 2, bm = 64, bn = 64, bk = 32, warps_m = 2, warps_n = 2, stages = 4, tensor_core = 1, splits = 2}} : tensor<64x64x64x64xbf16>, tensor<64x64x3x3xbf16> -> tensor<64x64x64x64xbf16>
  return
}

// -----

func.func @splits_data_backward_workspace(%dy: tensor<64x64x64x64xbf16>, %w: tensor<64x64x3x3xbf16>) {
  // expected-error @+1 {{kernel_config: a split workspace <= 67108864 bytes, got 134217728 bytes (2 splits)}}
  %dx = rudnn.conv_data_backward %dy, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1, channels_last = false, strategy = "implicit_gemm", kernel_config = {algorithm = 2, bm = 64, bn = 64, bk = 32, warps_m = 2, warps_n = 2, stages = 4, tensor_core = 1, splits = 2}} : tensor<64x64x64x64xbf16>, tensor<64x64x3x3xbf16> -> tensor<64x64x64x64xbf16>
  return
}

// -----

// A dynamic batch counts as 1: 5 splits × 65536 pixels × 64 channels × 4 bytes = 80 MiB already.
func.func @splits_dynamic_batch_workspace(%x: tensor<?x256x256x64xbf16>, %w: tensor<64x3x3x64xbf16>) {
  // expected-error @+1 {{kernel_config: a split workspace <= 67108864 bytes, got 83886080 bytes (5 splits)}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1, channels_last = true, strategy = "implicit_gemm", kernel_config = {algorithm = 2, bm = 64, bn = 64, bk = 32, warps_m = 2, warps_n = 2, stages = 4, tensor_core = 1, splits = 5}} : tensor<?x256x256x64xbf16>, tensor<64x3x3x64xbf16> -> tensor<?x256x256x64xbf16>
  return
}

// -----

// A forced tiled kernel on an image past its 32-bit indexing (2^30 input pixels).
func.func @huge_image_forced_depthwise(%x: tensor<?x1073741824x8xbf16>, %w: tensor<8x3x1xbf16>) {
  // expected-error @+1 {{kernel_config: the tiled kernels index one image in 32 bits}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64: 1>, padding = array<i64: 1>, dilation = array<i64: 1>, groups = 8, channels_last = true, strategy = "direct", kernel_config = {algorithm = 1, tile_h = 8, tile_w = 8, channels = 32}} : tensor<?x1073741824x8xbf16>, tensor<8x3x1xbf16> -> tensor<?x1073741824x8xbf16>
  return
}

// -----

// A forced implicit-GEMM tile on a filter past its 32-bit column count (5 taps x 2^28 channels).
func.func @huge_filter_forced_gemm(%x: tensor<?x8x268435456xbf16>, %w: tensor<8x5x268435456xbf16>) {
  // expected-error @+1 {{kernel_config: the implicit GEMM counts filter columns in 32 bits: taps x channels below 2^30 (input channels rounded up to whole 16-byte vectors), got 5 taps x 268435456 input / 8 output channels}}
  %y = rudnn.conv_forward %x, %w {stride = array<i64: 1>, padding = array<i64: 2>, dilation = array<i64: 1>, groups = 1, channels_last = true, strategy = "implicit_gemm", kernel_config = {algorithm = 2, bm = 64, bn = 64, bk = 32, warps_m = 2, warps_n = 2, stages = 4, tensor_core = 1, splits = 1}} : tensor<?x8x268435456xbf16>, tensor<8x5x268435456xbf16> -> tensor<?x8x8xbf16>
  return
}
