// rudnn.attention parses, prints and parses again; rudnn-select-kernel-config picks the strategy's
// tile (autotune without a provider: the tensor-core kernel where it fits) and rudnn-lower-to-launch
// emits one fused launch, or Fallback's three (scores into a temporary, softmax in place, weighted sum).
// RUN: rudnn-opt %s | rudnn-opt | FileCheck %s
// RUN: rudnn-opt %s --mlir-print-op-generic | rudnn-opt | FileCheck %s
// RUN: rudnn-opt %s --rudnn-select-kernel-config --rudnn-lower-to-launch | FileCheck %s --check-prefix=LAUNCH

// CHECK-LABEL: func.func @gqa
// CHECK: rudnn.attention %{{.*}}, %{{.*}}, %{{.*}} mask(%{{.*}} : tensor<1x1x?x?xui8>) {causal = true, scale = 1.250000e-01 : f32, strategy = "autotune"}
// LAUNCH-LABEL: func.func @gqa
// LAUNCH: rudnn.launch @rudnn_attention_flash_mma_bf16_mask_nobias_d128_m64_n64(
// LAUNCH-SAME: args ["rudnn::bf16", "rudnn::u8", "void", "rudnn::attention::FlashMmaPolicy<128, 64, 64>"]
// LAUNCH-SAME: grid [#rudnn.size<4 * dim(0, 2) ceildiv 64>, #rudnn.size<dim(0, 0) * 8>, #rudnn.size<1>] block [128, 1, 1] shared 87040
// LAUNCH-SAME: #rudnn.param<"mask_batch_stride" : "long long" = size(0)>, #rudnn.param<"mask_head_stride" : "long long" = size(0)>
// LAUNCH-SAME: #rudnn.param<"causal" : "long long" = size(1)>
func.func @gqa(%q: tensor<?x32x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>, %m: tensor<1x1x?x?xui8>)
    -> tensor<?x32x?x128xbf16> {
  %o = rudnn.attention %q, %k, %v mask(%m : tensor<1x1x?x?xui8>) {scale = 0.125 : f32, causal = true, strategy = "autotune"}
      : tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x32x?x128xbf16>
  return %o : tensor<?x32x?x128xbf16>
}

// LAUNCH-LABEL: func.func @fallback
// LAUNCH: %[[S:.*]] = rudnn.launch @rudnn_attention_scores_f32_nomask_biasf32_m64_s32(
// LAUNCH-SAME: #rudnn.param<"bias_batch_stride" : "long long" = size(dim(3, 1) * dim(3, 2) * dim(3, 3))>, #rudnn.param<"bias_head_stride" : "long long" = size(0)>
// LAUNCH-SAME: result_elements = [#rudnn.size<dim(0, 0) * 4 * dim(0, 2) * dim(1, 2)>]
// LAUNCH: rudnn.launch @rudnn_attention_softmax_t32_r8(%{{.*}}, %[[S]])
// LAUNCH: rudnn.launch @rudnn_attention_weighted_sum_f32_m64_s32(%{{.*}}, %[[S]])
func.func @fallback(%q: tensor<?x4x?x512xf32>, %k: tensor<?x4x?x512xf32>, %v: tensor<?x4x?x300xf32>, %b: tensor<?x1x?x?xf32>)
    -> tensor<?x4x?x300xf32> {
  %o = rudnn.attention %q, %k, %v bias(%b : tensor<?x1x?x?xf32>) {scale = 0.04 : f32, causal = false, strategy = "fallback"}
      : tensor<?x4x?x512xf32>, tensor<?x4x?x512xf32>, tensor<?x4x?x300xf32> -> tensor<?x4x?x300xf32>
  return %o : tensor<?x4x?x300xf32>
}
