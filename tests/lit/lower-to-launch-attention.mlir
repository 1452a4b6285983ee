// rudnn-lower-to-launch on rudnn.attention: the strategy its kernel_config names. flash_mma and
// flash_unit: one fused launch, grid (ceil(group · q_len / block_m), batch · kv_heads); fallback:
// scores → softmax (in place) → weighted sum over an FP32 workspace [B, Hq, Tq, Tk] that is a
// call-scoped temporary (result_elements sizes it). Absent mask/bias are null void buffers. Every
// launch ends with the (batch, head, token) strides of q, k, v and out as stride(slot, dim) sizes (the
// call's views); a launch that does not write out gets 0 for its strides.
// RUN: rudnn-opt %s --rudnn-lower-to-launch | FileCheck %s

// flash_mma 64x64, D = 128, 4 query heads per KV head: (64 + 4 · 64) · (128 + 8) · 2 = 87040 bytes.
// CHECK-LABEL: func.func @flash_mma
// CHECK-SAME: (%[[Q:.*]]: tensor<?x32x?x128xbf16>, %[[K:.*]]: tensor<?x8x?x128xbf16>, %[[V:.*]]: tensor<?x8x?x128xbf16>)
// CHECK: %[[O:.*]] = rudnn.launch @rudnn_attention_flash_mma_bf16_nomask_nobias_d128_m64_n64(%[[Q]], %[[K]], %[[V]])
// CHECK-SAME: header "rudnn/attention/flash_mma.cuh" function "rudnn::attention::flash_attention_mma"
// CHECK-SAME: args ["rudnn::bf16", "void", "void", "rudnn::attention::FlashMmaPolicy<128, 64, 64>"]
// CHECK-SAME: grid [#rudnn.size<4 * dim(0, 2) ceildiv 64>, #rudnn.size<dim(0, 0) * 8>, #rudnn.size<1>] block [128, 1, 1] shared 87040
// CHECK-SAME: #rudnn.param<"mask" : "const void*" = null>, #rudnn.param<"bias" : "const void*" = null>, #rudnn.param<"out" : "rudnn::bf16*" = buffer(3)>
// CHECK-SAME: #rudnn.param<"q_heads" : "long long" = size(32)>, #rudnn.param<"kv_heads" : "long long" = size(8)>
// CHECK-SAME: #rudnn.param<"causal" : "long long" = size(1)>, #rudnn.param<"scale" : "float" = f32(1.250000e-01)>,
// CHECK-SAME: #rudnn.param<"q_batch_stride" : "long long" = size(stride(0, 0))>, #rudnn.param<"q_head_stride" : "long long" = size(stride(0, 1))>, #rudnn.param<"q_token_stride" : "long long" = size(stride(0, 2))>,
// CHECK-SAME: #rudnn.param<"k_batch_stride" : "long long" = size(stride(1, 0))>, #rudnn.param<"k_head_stride" : "long long" = size(stride(1, 1))>, #rudnn.param<"k_token_stride" : "long long" = size(stride(1, 2))>,
// CHECK-SAME: #rudnn.param<"v_batch_stride" : "long long" = size(stride(2, 0))>, #rudnn.param<"v_head_stride" : "long long" = size(stride(2, 1))>, #rudnn.param<"v_token_stride" : "long long" = size(stride(2, 2))>,
// CHECK-SAME: #rudnn.param<"out_batch_stride" : "long long" = size(stride(3, 0))>, #rudnn.param<"out_head_stride" : "long long" = size(stride(3, 1))>, #rudnn.param<"out_token_stride" : "long long" = size(stride(3, 2))>]
// CHECK: return %[[O]]
func.func @flash_mma(%q: tensor<?x32x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) -> tensor<?x32x?x128xbf16> {
  %o = rudnn.attention %q, %k, %v {scale = 0.125 : f32, causal = true, strategy = "autotune",
         kernel_config = {strategy = 0, block_m = 64, block_n = 64}}
      : tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x32x?x128xbf16>
  return %o : tensor<?x32x?x128xbf16>
}

// rudnn.head_panels (token-major prefill with grouped heads): one query head per panel, grid
// (ceil(q_len / block_m), batch · q_heads).
// CHECK-LABEL: func.func @flash_mma_head_panels
// CHECK: rudnn.launch @rudnn_attention_flash_mma_f16_nomask_nobias_d64_m128_n64_head_panels(
// CHECK-SAME: args ["rudnn::f16", "void", "void", "rudnn::attention::FlashMmaPolicy<64, 128, 64, true>"]
// CHECK-SAME: grid [#rudnn.size<1 * dim(0, 2) ceildiv 128>, #rudnn.size<dim(0, 0) * 32>, #rudnn.size<1>]
func.func @flash_mma_head_panels(%q: tensor<?x32x?x64xf16>, %k: tensor<?x8x?x64xf16>, %v: tensor<?x8x?x64xf16>) -> tensor<?x32x?x64xf16> {
  %o = rudnn.attention %q, %k, %v {scale = 0.125 : f32, causal = true, strategy = "flash_mma",
         kernel_config = {strategy = 0, block_m = 128, block_n = 64}, rudnn.head_panels}
      : tensor<?x32x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16> -> tensor<?x32x?x64xf16>
  return %o : tensor<?x32x?x64xf16>
}

// flash_mma's wgmma tile (sm_90a): flash_attention_wgmma with the same arguments, two warpgroups
// (256 threads) for 128 query rows, (128 + 4 · 128) · 128 · 2 + 1024 = 164864 bytes (no padding; the
// alignment slack).
// CHECK-LABEL: func.func @flash_wgmma
// CHECK: rudnn.launch @rudnn_attention_flash_wgmma_bf16_mask_biasf32_d128_m128_n128(
// CHECK-SAME: header "rudnn/attention/flash_wgmma.cuh" function "rudnn::attention::flash_attention_wgmma"
// CHECK-SAME: args ["rudnn::bf16", "rudnn::u8", "float", "rudnn::attention::FlashWgmmaPolicy<128, 128, 128>"]
// CHECK-SAME: grid [#rudnn.size<4 * dim(0, 2) ceildiv 128>, #rudnn.size<dim(0, 0) * 8>, #rudnn.size<1>] block [256, 1, 1] shared 164864
// CHECK-LABEL: func.func @flash_wgmma_head_panels
// CHECK: rudnn.launch @rudnn_attention_flash_wgmma_f16_nomask_nobias_d64_m128_n128_head_panels(
// CHECK-SAME: args ["rudnn::f16", "void", "void", "rudnn::attention::FlashWgmmaPolicy<64, 128, 128, true>"]
// CHECK-SAME: grid [#rudnn.size<1 * dim(0, 2) ceildiv 128>, #rudnn.size<dim(0, 0) * 32>, #rudnn.size<1>] block [256, 1, 1] shared 82944
func.func @flash_wgmma(%q: tensor<?x32x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>,
                       %m: tensor<?x32x?x?xui8>, %b: tensor<?x32x?x?xf32>) -> tensor<?x32x?x128xbf16> {
  %o = rudnn.attention %q, %k, %v mask(%m : tensor<?x32x?x?xui8>) bias(%b : tensor<?x32x?x?xf32>) {scale = 0.125 : f32,
         causal = true, strategy = "flash_mma", kernel_config = {strategy = 0, block_m = 128, block_n = 128, wgmma = 1}}
      : tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x32x?x128xbf16>
  return %o : tensor<?x32x?x128xbf16>
}
func.func @flash_wgmma_head_panels(%q: tensor<?x32x?x64xf16>, %k: tensor<?x8x?x64xf16>, %v: tensor<?x8x?x64xf16>) -> tensor<?x32x?x64xf16> {
  %o = rudnn.attention %q, %k, %v {scale = 0.125 : f32, causal = true, strategy = "flash_mma",
         kernel_config = {strategy = 0, block_m = 128, block_n = 128, wgmma = 1}, rudnn.head_panels}
      : tensor<?x32x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16> -> tensor<?x32x?x64xf16>
  return %o : tensor<?x32x?x64xf16>
}

// A plain-core strategy ignores rudnn.head_panels (it places rows of any layout).
// CHECK-LABEL: func.func @flash_unit_head_panels
// CHECK: rudnn.launch @rudnn_attention_flash_unit_f32_nomask_nobias_m64_n32_t4_v64(
// CHECK-SAME: grid [#rudnn.size<4 * dim(0, 2) ceildiv 64>, #rudnn.size<dim(0, 0) * 1>, #rudnn.size<1>]
func.func @flash_unit_head_panels(%q: tensor<1x4x16x64xf32>, %k: tensor<1x1x16x64xf32>, %v: tensor<1x1x16x64xf32>) -> tensor<1x4x16x64xf32> {
  %o = rudnn.attention %q, %k, %v {scale = 0.125 : f32, causal = false, strategy = "flash_unit",
         kernel_config = {strategy = 1, block_m = 64, block_n = 32, threads_per_row = 4, max_value_dim = 64}, rudnn.head_panels}
      : tensor<1x4x16x64xf32>, tensor<1x1x16x64xf32>, tensor<1x1x16x64xf32> -> tensor<1x4x16x64xf32>
  return %o : tensor<1x4x16x64xf32>
}

// CHECK-LABEL: func.func @flash_unit
// CHECK: rudnn.launch @rudnn_attention_flash_unit_f32_nomask_nobias_m64_n32_t4_v64(
// CHECK-SAME: header "rudnn/attention/flash_unit.cuh" function "rudnn::attention::flash_attention_unit"
// CHECK-SAME: args ["float", "void", "void", "rudnn::attention::FlashUnitPolicy<64, 32, 4, 64>"]
// CHECK-SAME: grid [#rudnn.size<1 * dim(0, 2) ceildiv 64>, #rudnn.size<dim(0, 0) * 4>, #rudnn.size<1>] block [256, 1, 1] shared 43520
// CHECK-SAME: {origin = "rudnn.attention", rudnn.min_blocks = 2 : i64}
func.func @flash_unit(%q: tensor<1x4x16x64xf32>, %k: tensor<1x4x16x64xf32>, %v: tensor<1x4x16x64xf32>) -> tensor<1x4x16x64xf32> {
  %o = rudnn.attention %q, %k, %v {scale = 0.125 : f32, causal = false, strategy = "flash_unit",
         kernel_config = {strategy = 1, block_m = 64, block_n = 32, threads_per_row = 4, max_value_dim = 64}}
      : tensor<1x4x16x64xf32>, tensor<1x4x16x64xf32>, tensor<1x4x16x64xf32> -> tensor<1x4x16x64xf32>
  return %o : tensor<1x4x16x64xf32>
}

// fallback: three launches sharing the workspace temporary (launch result 0 of the scores).
// CHECK-LABEL: func.func @fallback
// CHECK-SAME: (%[[Q:.*]]: tensor<1x4x16x64xf16>, %[[K:.*]]: tensor<1x4x16x64xf16>, %[[V:.*]]: tensor<1x4x16x64xf16>)
// CHECK: %[[W:.*]] = rudnn.launch @rudnn_attention_scores_f16_nomask_nobias_m64_s32(%[[Q]], %[[K]], %[[V]])
// CHECK-SAME: function "rudnn::attention::attention_scores" args ["rudnn::f16", "void", "void", "rudnn::attention::FallbackTilePolicy<64, 64, 16, 4, 4>"]
// CHECK-SAME: grid [#rudnn.size<1 * dim(0, 2) ceildiv 64>, #rudnn.size<dim(0, 0) * 4>, #rudnn.size<dim(1, 2) ceildiv 64>] block [256, 1, 1] shared 8704
// CHECK-SAME: #rudnn.param<"workspace" : "float*" = buffer(3)>
// CHECK-SAME: #rudnn.param<"q_token_stride" : "long long" = size(stride(0, 2))>
// CHECK-SAME: #rudnn.param<"out_batch_stride" : "long long" = size(0)>, #rudnn.param<"out_head_stride" : "long long" = size(0)>, #rudnn.param<"out_token_stride" : "long long" = size(0)>]
// CHECK-SAME: result_elements = [#rudnn.size<dim(0, 0) * 4 * dim(0, 2) * dim(1, 2)>]} : {{.*}} -> tensor<?xf32>
// CHECK: rudnn.launch @rudnn_attention_softmax_t32_r8(%[[Q]], %[[K]], %[[V]], %[[W]])
// CHECK-SAME: function "rudnn::attention::attention_softmax" args ["rudnn::attention::FallbackSoftmaxPolicy<32, 8>"]
// CHECK-SAME: grid [#rudnn.size<dim(0, 0) * 4 * dim(0, 2) ceildiv 8>, #rudnn.size<1>, #rudnn.size<1>] block [256, 1, 1] shared 0
// CHECK: %[[O:.*]] = rudnn.launch @rudnn_attention_weighted_sum_f16_m64_s32(%[[Q]], %[[K]], %[[V]], %[[W]])
// CHECK-SAME: function "rudnn::attention::attention_weighted_sum"
// CHECK-SAME: #rudnn.param<"out" : "rudnn::f16*" = buffer(4)>, #rudnn.param<"workspace" : "const float*" = buffer(3)>
// CHECK-SAME: #rudnn.param<"v_token_stride" : "long long" = size(stride(2, 2))>, #rudnn.param<"out_batch_stride" : "long long" = size(stride(4, 0))>, #rudnn.param<"out_head_stride" : "long long" = size(stride(4, 1))>, #rudnn.param<"out_token_stride" : "long long" = size(stride(4, 2))>]
// CHECK: return %[[O]]
func.func @fallback(%q: tensor<1x4x16x64xf16>, %k: tensor<1x4x16x64xf16>, %v: tensor<1x4x16x64xf16>) -> tensor<1x4x16x64xf16> {
  %o = rudnn.attention %q, %k, %v {scale = 0.125 : f32, causal = false, strategy = "fallback",
         kernel_config = {strategy = 2, block_m = 64, softmax_threads = 32}}
      : tensor<1x4x16x64xf16>, tensor<1x4x16x64xf16>, tensor<1x4x16x64xf16> -> tensor<1x4x16x64xf16>
  return %o : tensor<1x4x16x64xf16>
}
