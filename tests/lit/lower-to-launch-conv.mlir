// rudnn-lower-to-launch on the convolution ops (ConvToLaunch.cpp): every kernel carries the compiled-in
// rudnn::conv::Geometry<C, O, G, D, H, W, KD, KH, KW, strides, paddings, dilations> and takes the batch
// `n` from dim 0 of the op's first operand; channels-first ops swap their inputs to channels-last
// temporaries (flat, `result_elements`) and swap the result back; the implicit-GEMM weight backward
// writes FP32 split sums that conv_split_reduce adds in order; bias_grad adds conv_bias_grad.
// RUN: env RUDNN_WGMMA=1 rudnn-opt %s --rudnn-lower-to-launch | FileCheck %s

// Channels-last forward on tensor cores: one launch; grid n·3136 output pixels / BM 64 (one 64-wide
// column tile), 128 threads, 4 stages × (64 + 64) rows × (32 + 8) bf16 = 40960 bytes.
// CHECK-LABEL: func.func @nhwc_forward
// CHECK: rudnn.launch @rudnn_conv_fprop_igemm_f32bias_bf16_igemm_tc_64x64x32_w2x2_s4_g{{[0-9a-f]+}}(%arg0, %arg1, %arg2)
// CHECK-SAME: header "rudnn/conv/implicit_gemm.cuh" function "rudnn::conv::conv_fprop_igemm"
// CHECK-SAME: args ["rudnn::bf16", "float", "rudnn::conv::Geometry<64, 64, 1, 1, 56, 56, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1>", "rudnn::gemm::BlockPolicy<64, 64, 32, 2, 2, 4, true>"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0) * 3136 ceildiv 64>, #rudnn.size<1>, #rudnn.size<1>] block [128, 1, 1] shared 40960
// CHECK-SAME: #rudnn.param<"bias" : "const float*" = buffer(2)>, #rudnn.param<"y" : "rudnn::bf16*" = buffer(3)>, #rudnn.param<"n" : "long long" = size(dim(0, 0))>]
// CHECK-NOT: rudnn.launch
func.func @nhwc_forward(%x: tensor<?x56x56x64xbf16>, %w: tensor<64x3x3x64xbf16>, %b: tensor<64xf32>) -> tensor<?x56x56x64xbf16> {
  %y = rudnn.conv_forward %x, %w bias(%b : tensor<64xf32>) {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>,
         dilation = array<i64: 1, 1>, groups = 1, channels_last = true, strategy = "implicit_gemm",
         kernel_config = {algorithm = 2, bm = 64, bn = 64, bk = 32, warps_m = 2, warps_n = 2, stages = 4, tensor_core = 1, splits = 1}}
       : tensor<?x56x56x64xbf16>, tensor<64x3x3x64xbf16> -> tensor<?x56x56x64xbf16>
  return %y : tensor<?x56x56x64xbf16>
}

// A C = 3 stem (7×7 stride 2) on the implicit GEMM: x and w are first copied with their channels
// zero-padded to 8 (whole 16-byte vectors: conv_config::gemmGeometry), x per image (n·224·224 rows),
// w once (64·49 rows); the GEMM runs at C = 8 on the copies (K = 392, 16-byte gathers).
// CHECK-LABEL: func.func @stem_forward
// CHECK: %[[X8:.*]] = rudnn.launch @rudnn_conv_copy_channels_bf16(%arg0, %arg1)
// CHECK-SAME: header "rudnn/conv/layout.cuh" function "rudnn::conv::copy_channels" args ["rudnn::bf16"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0) * 401408 ceildiv 256>, {{.*}} block [256, 1, 1] shared 0
// CHECK-SAME: #rudnn.param<"src" : "const rudnn::bf16*" = buffer(0)>, #rudnn.param<"dst" : "rudnn::bf16*" = buffer(2)>, #rudnn.param<"rows" : "long long" = size(dim(0, 0) * 50176)>, #rudnn.param<"src_c" : "long long" = size(3)>, #rudnn.param<"dst_c" : "long long" = size(8)>
// CHECK-SAME: result_elements = [#rudnn.size<dim(0, 0) * 401408>]
// CHECK: %[[W8:.*]] = rudnn.launch @rudnn_conv_copy_channels_bf16(%arg0, %arg1, %[[X8]])
// CHECK-SAME: #rudnn.param<"src" : "const rudnn::bf16*" = buffer(1)>, #rudnn.param<"dst" : "rudnn::bf16*" = buffer(3)>, #rudnn.param<"rows" : "long long" = size(3136)>
// CHECK-SAME: result_elements = [#rudnn.size<25088>]
// CHECK: %[[Y:.*]] = rudnn.launch @rudnn_conv_fprop_igemm_nobias_bf16_igemm_tc_64x64x32_w2x2_s4_g{{[0-9a-f]+}}(%arg0, %arg1, %[[X8]], %[[W8]])
// CHECK-SAME: args ["rudnn::bf16", "void", "rudnn::conv::Geometry<8, 64, 1, 1, 224, 224, 1, 7, 7, 1, 2, 2, 0, 3, 3, 1, 1, 1>", "rudnn::gemm::BlockPolicy<64, 64, 32, 2, 2, 4, true>"]
// CHECK-SAME: #rudnn.param<"x" : "const rudnn::bf16*" = buffer(2)>, #rudnn.param<"w" : "const rudnn::bf16*" = buffer(3)>
// CHECK: return %[[Y]]
func.func @stem_forward(%x: tensor<?x224x224x3xbf16>, %w: tensor<64x7x7x3xbf16>) -> tensor<?x112x112x64xbf16> {
  %y = rudnn.conv_forward %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 3, 3>,
         dilation = array<i64: 1, 1>, groups = 1, channels_last = true, strategy = "implicit_gemm",
         kernel_config = {algorithm = 2, bm = 64, bn = 64, bk = 32, warps_m = 2, warps_n = 2, stages = 4, tensor_core = 1, splits = 1}}
       : tensor<?x224x224x3xbf16>, tensor<64x7x7x3xbf16> -> tensor<?x112x112x64xbf16>
  return %y : tensor<?x112x112x64xbf16>
}

// Split-K forward (3 splits of the 18 K blocks): FP32 sums [3, n·3136, 64] on the (M tiles, N tiles,
// splits) grid, then the ordered reduce adds the bias and rounds into y.
// CHECK-LABEL: func.func @split_forward
// CHECK: %[[P:.*]] = rudnn.launch @rudnn_conv_fprop_igemm_split_bf16_igemm_tc_64x64x32_w2x2_s4_g{{[0-9a-f]+}}(%arg0, %arg1, %arg2)
// CHECK-SAME: function "rudnn::conv::conv_fprop_igemm_split"
// CHECK-SAME: args ["rudnn::bf16", "rudnn::conv::Geometry<64, 64, 1, 1, 56, 56, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1>", "rudnn::gemm::BlockPolicy<64, 64, 32, 2, 2, 4, true>"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0) * 3136 ceildiv 64>, #rudnn.size<1>, #rudnn.size<3>] block [128, 1, 1] shared 40960
// CHECK-SAME: #rudnn.param<"partial" : "float*" = buffer(3)>, #rudnn.param<"n" : "long long" = size(dim(0, 0))>, #rudnn.param<"splits" : "long long" = size(3)>
// CHECK-SAME: result_elements = [#rudnn.size<dim(0, 0) * 602112>]
// CHECK: %[[Y:.*]] = rudnn.launch @rudnn_conv_split_reduce_bf16_f32bias_(%arg0, %arg1, %arg2, %[[P]])
// CHECK-SAME: function "rudnn::conv::conv_split_reduce" args ["rudnn::bf16", "float"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0) * 200704 ceildiv 256>, {{.*}} block [256, 1, 1] shared 0
// CHECK-SAME: #rudnn.param<"partial" : "const float*" = buffer(3)>, #rudnn.param<"bias" : "const float*" = buffer(2)>, #rudnn.param<"out" : "rudnn::bf16*" = buffer(4)>, #rudnn.param<"elements" : "long long" = size(dim(0, 0) * 200704)>, #rudnn.param<"columns" : "long long" = size(64)>, #rudnn.param<"splits" : "long long" = size(3)>
// CHECK: return %[[Y]]
func.func @split_forward(%x: tensor<?x56x56x64xbf16>, %w: tensor<64x3x3x64xbf16>, %b: tensor<64xf32>) -> tensor<?x56x56x64xbf16> {
  %y = rudnn.conv_forward %x, %w bias(%b : tensor<64xf32>) {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>,
         dilation = array<i64: 1, 1>, groups = 1, channels_last = true, strategy = "implicit_gemm",
         kernel_config = {algorithm = 2, bm = 64, bn = 64, bk = 32, warps_m = 2, warps_n = 2, stages = 4, tensor_core = 1, splits = 3}}
       : tensor<?x56x56x64xbf16>, tensor<64x3x3x64xbf16> -> tensor<?x56x56x64xbf16>
  return %y : tensor<?x56x56x64xbf16>
}

// Split-K data backward, channels-first: swap dy and w, split sums [2, n·64, 128], the reduce into
// a channels-last temporary (no bias), swap back. 128 columns: a grid of 2 column tiles.
// CHECK-LABEL: func.func @split_data_backward
// CHECK: %[[DY:.*]] = rudnn.launch @rudnn_conv_swap_bf16
// CHECK: %[[W:.*]] = rudnn.launch @rudnn_conv_swap_bf16
// CHECK: %[[P:.*]] = rudnn.launch @rudnn_conv_dgrad_igemm_split_bf16_igemm_tc_64x64x32_w2x2_s4_g{{[0-9a-f]+}}(%arg0, %arg1, %[[DY]], %[[W]])
// CHECK-SAME: grid [#rudnn.size<dim(0, 0) * 64 ceildiv 64>, #rudnn.size<2>, #rudnn.size<2>]
// CHECK-SAME: result_elements = [#rudnn.size<dim(0, 0) * 16384>]
// CHECK: %[[DX:.*]] = rudnn.launch @rudnn_conv_split_reduce_bf16_(%arg0, %arg1, %[[DY]], %[[W]], %[[P]])
// CHECK-SAME: args ["rudnn::bf16", "void"]
// CHECK-SAME: #rudnn.param<"bias" : "const void*" = null>
// CHECK-SAME: result_elements = [#rudnn.size<dim(0, 0) * 8192>]
// CHECK: %[[OUT:.*]] = rudnn.launch @rudnn_conv_swap_bf16(%arg0, %arg1, %[[DY]], %[[W]], %[[P]], %[[DX]])
// CHECK: return %[[OUT]]
func.func @split_data_backward(%dy: tensor<?x64x8x8xbf16>, %w: tensor<64x128x3x3xbf16>) -> tensor<?x128x8x8xbf16> {
  %dx = rudnn.conv_data_backward %dy, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>,
          dilation = array<i64: 1, 1>, groups = 1, channels_last = false, strategy = "implicit_gemm",
          kernel_config = {algorithm = 2, bm = 64, bn = 64, bk = 32, warps_m = 2, warps_n = 2, stages = 4, tensor_core = 1, splits = 2}}
        : tensor<?x64x8x8xbf16>, tensor<64x128x3x3xbf16> -> tensor<?x128x8x8xbf16>
  return %dx : tensor<?x128x8x8xbf16>
}

// Channels-first grouped data backward on the direct kernel: swap dy [n, 8, 25] and w [8, 4, 9] to
// channels-last temporaries, dgrad into a third, swap it back to [n, 8, 9, 9].
// CHECK-LABEL: func.func @nchw_data_backward
// CHECK: %[[DY:.*]] = rudnn.launch @rudnn_conv_swap_f32(%arg0, %arg1) {{.*}}grid [#rudnn.size<dim(0, 0) * 1>, {{.*}} block [256, 1, 1] shared 4224
// CHECK-SAME: #rudnn.param<"a" : "long long" = size(dim(0, 0))>, #rudnn.param<"b" : "long long" = size(8)>, #rudnn.param<"s" : "long long" = size(25)>
// CHECK-SAME: result_elements = [#rudnn.size<dim(0, 0) * 200>]
// CHECK: %[[W:.*]] = rudnn.launch @rudnn_conv_swap_f32(%arg0, %arg1, %[[DY]]) {{.*}}#rudnn.param<"a" : "long long" = size(8)>, #rudnn.param<"b" : "long long" = size(4)>, #rudnn.param<"s" : "long long" = size(9)>
// CHECK: %[[DX:.*]] = rudnn.launch @rudnn_conv_dgrad_direct_f32_direct_t128_g{{[0-9a-f]+}}(%arg0, %arg1, %[[DY]], %[[W]])
// CHECK-SAME: args ["float", "rudnn::conv::Geometry<8, 8, 2, 1, 9, 9, 1, 3, 3, 1, 2, 2, 0, 1, 1, 1, 1, 1>", "rudnn::conv::DirectPolicy<128>"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0) * 648 ceildiv 128>, {{.*}} block [128, 1, 1] shared 0
// CHECK-SAME: #rudnn.param<"dy" : "const float*" = buffer(2)>, #rudnn.param<"w" : "const float*" = buffer(3)>, #rudnn.param<"dx" : "float*" = buffer(4)>
// CHECK: %[[OUT:.*]] = rudnn.launch @rudnn_conv_swap_f32(%arg0, %arg1, %[[DY]], %[[W]], %[[DX]]) {{.*}}#rudnn.param<"b" : "long long" = size(81)>, #rudnn.param<"s" : "long long" = size(8)>
// CHECK-SAME: -> tensor<?x8x9x9xf32>
// CHECK: return %[[OUT]]
func.func @nchw_data_backward(%dy: tensor<?x8x5x5xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<?x8x9x9xf32> {
  %dx = rudnn.conv_data_backward %dy, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>,
          dilation = array<i64: 1, 1>, groups = 2, channels_last = false, strategy = "direct",
          kernel_config = {algorithm = 0, threads = 128}} : tensor<?x8x5x5xf32>, tensor<8x4x3x3xf32> -> tensor<?x8x9x9xf32>
  return %dx : tensor<?x8x9x9xf32>
}

// Weight backward on tensor cores split 4 ways: FP32 partial sums (4 × 64 × 288 floats), the ordered
// reduce to bf16, then the f32 bias gradient over n·256 rows.
// CHECK-LABEL: func.func @weight_backward
// CHECK: %[[P:.*]] = rudnn.launch @rudnn_conv_wgrad_igemm_bf16_igemm_tc_64x64x32_w2x2_s4_g{{[0-9a-f]+}}(%arg0, %arg1)
// CHECK-SAME: grid [#rudnn.size<20>, {{.*}} block [128, 1, 1] shared 36864
// CHECK-SAME: #rudnn.param<"partial" : "float*" = buffer(2)>, #rudnn.param<"n" : "long long" = size(dim(0, 0))>, #rudnn.param<"splits" : "long long" = size(4)>
// CHECK-SAME: result_elements = [#rudnn.size<73728>]
// CHECK: %[[DW:.*]] = rudnn.launch @rudnn_conv_split_reduce_bf16_(%arg0, %arg1, %[[P]])
// CHECK-SAME: args ["rudnn::bf16", "void"]
// CHECK-SAME: #rudnn.param<"bias" : "const void*" = null>
// CHECK-SAME: #rudnn.param<"elements" : "long long" = size(18432)>, #rudnn.param<"columns" : "long long" = size(1)>, #rudnn.param<"splits" : "long long" = size(4)>
// CHECK-SAME: -> tensor<64x3x3x32xbf16>
// CHECK: %[[DB:.*]] = rudnn.launch @rudnn_conv_bias_grad_bf16(%arg0, %arg1, %[[P]], %[[DW]])
// CHECK-SAME: #rudnn.param<"dy" : "const rudnn::bf16*" = buffer(1)>, #rudnn.param<"db" : "float*" = buffer(4)>, #rudnn.param<"rows" : "long long" = size(dim(0, 0) * 256)>
// CHECK: return %[[DW]], %[[DB]]
func.func @weight_backward(%x: tensor<?x16x16x32xbf16>, %dy: tensor<?x16x16x64xbf16>) -> (tensor<64x3x3x32xbf16>, tensor<64xf32>) {
  %dw, %db = rudnn.conv_weight_backward %x, %dy {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>,
               dilation = array<i64: 1, 1>, groups = 1, channels_last = true, strategy = "implicit_gemm", bias_grad,
               kernel_config = {algorithm = 2, bm = 64, bn = 64, bk = 32, warps_m = 2, warps_n = 2, stages = 4, tensor_core = 1, splits = 4}}
             : tensor<?x16x16x32xbf16>, tensor<?x16x16x64xbf16> -> tensor<64x3x3x32xbf16>, tensor<64xf32>
  return %dw, %db : tensor<64x3x3x32xbf16>, tensor<64xf32>
}

// Depthwise weight backward (512 channels, multiplier 1, 3x3) split 16 ways: conv_wgrad_depthwise
// writes FP32 partial sums (16 × 512 × 9 floats) over ceil(512 / 32) · 16 = 256 blocks of 256
// threads (8 KiB: each thread's 8 channel sums, one 16-byte bf16 vector of channels, for the slot
// tree), then the ordered reduce to bf16.
// CHECK-LABEL: func.func @depthwise_weight_backward
// CHECK: %[[P:.*]] = rudnn.launch @rudnn_conv_wgrad_depthwise_bf16_depthwise_8x8x32_g{{[0-9a-f]+}}(%arg0, %arg1)
// CHECK-SAME: header "rudnn/conv/depthwise_backward.cuh" function "rudnn::conv::conv_wgrad_depthwise"
// CHECK-SAME: args ["rudnn::bf16", "rudnn::conv::Geometry<512, 512, 512, 1, 56, 56, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1>", "rudnn::conv::DepthwisePolicy<8, 8, 32>"]
// CHECK-SAME: grid [#rudnn.size<256>, {{.*}} block [256, 1, 1] shared 8192
// CHECK-SAME: #rudnn.param<"partial" : "float*" = buffer(2)>, #rudnn.param<"n" : "long long" = size(dim(0, 0))>, #rudnn.param<"splits" : "long long" = size(16)>
// CHECK-SAME: result_elements = [#rudnn.size<73728>]
// CHECK: %[[DW:.*]] = rudnn.launch @rudnn_conv_split_reduce_bf16_(%arg0, %arg1, %[[P]])
// CHECK-SAME: args ["rudnn::bf16", "void"]
// CHECK-SAME: #rudnn.param<"bias" : "const void*" = null>
// CHECK-SAME: #rudnn.param<"elements" : "long long" = size(4608)>, #rudnn.param<"columns" : "long long" = size(1)>, #rudnn.param<"splits" : "long long" = size(16)>
// CHECK-SAME: -> tensor<512x3x3x1xbf16>
// CHECK: return %[[DW]]
func.func @depthwise_weight_backward(%x: tensor<?x56x56x512xbf16>, %dy: tensor<?x56x56x512xbf16>) -> tensor<512x3x3x1xbf16> {
  %dw = rudnn.conv_weight_backward %x, %dy {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>,
          dilation = array<i64: 1, 1>, groups = 512, channels_last = true, strategy = "direct",
          kernel_config = {algorithm = 1, tile_h = 8, tile_w = 8, channels = 32, splits = 16}}
        : tensor<?x56x56x512xbf16>, tensor<?x56x56x512xbf16> -> tensor<512x3x3x1xbf16>
  return %dw : tensor<512x3x3x1xbf16>
}

// Depthwise data backward with multiplier 2, stride 2 (dx tiles of 8x8 over 32 input channels):
// grid n · ceil(17/8) · ceil(16/8) · 1 = n·6; shared FP32 weights 9·2·32·4 + the dy halo
// (((8 − 1) + 2) / 2 + 1)² · 2 · 32 · 4 = 2304 + 6400 = 8704 bytes.
// CHECK-LABEL: func.func @depthwise_data_backward
// CHECK: rudnn.launch @rudnn_conv_dgrad_depthwise_f32_depthwise_8x8x32_g{{[0-9a-f]+}}(%arg0, %arg1)
// CHECK-SAME: header "rudnn/conv/depthwise_backward.cuh" function "rudnn::conv::conv_dgrad_depthwise"
// CHECK-SAME: grid [#rudnn.size<dim(0, 0) * 6>, {{.*}} block [256, 1, 1] shared 8704
func.func @depthwise_data_backward(%dy: tensor<?x9x8x64xf32>, %w: tensor<64x3x3x1xf32>) -> tensor<?x17x16x32xf32> {
  %dx = rudnn.conv_data_backward %dy, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>,
          dilation = array<i64: 1, 1>, groups = 32, channels_last = true, strategy = "direct",
          kernel_config = {algorithm = 1, tile_h = 8, tile_w = 8, channels = 32}}
        : tensor<?x9x8x64xf32>, tensor<64x3x3x1xf32> -> tensor<?x17x16x32xf32>
  return %dx : tensor<?x17x16x32xf32>
}

// Hopper's warpgroup MMA (kernel_config wgmma = 1; sm_90a, the default target here, with the
// RUDNN_WGMMA=1 opt-in of the RUN line):
// gemm::WgmmaPolicy<128, 128, 64, 4> — two warpgroups (256 threads), 4 stages of (128 + 128) x 64
// bf16 in the swizzled layouts plus 1024 bytes to align them: 4 · 32768 + 1024 = 132096 bytes.
// CHECK-LABEL: func.func @wgmma_forward
// CHECK: rudnn.launch @rudnn_conv_fprop_igemm_nobias_bf16_igemm_wgmma_128x128x64_s4_g{{[0-9a-f]+}}(%arg0, %arg1)
// CHECK-SAME: "rudnn::gemm::WgmmaPolicy<128, 128, 64, 4>"]
// CHECK-SAME: block [256, 1, 1] shared 132096
func.func @wgmma_forward(%x: tensor<?x14x14x256xbf16>, %w: tensor<256x3x3x256xbf16>) -> tensor<?x14x14x256xbf16> {
  %y = rudnn.conv_forward %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>,
         groups = 1, channels_last = true, strategy = "implicit_gemm",
         kernel_config = {algorithm = 2, bm = 128, bn = 128, bk = 64, warps_m = 8, warps_n = 1, stages = 4,
                          tensor_core = 1, splits = 1, wgmma = 1}}
       : tensor<?x14x14x256xbf16>, tensor<256x3x3x256xbf16> -> tensor<?x14x14x256xbf16>
  return %y : tensor<?x14x14x256xbf16>
}
