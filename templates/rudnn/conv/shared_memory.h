#pragma once
// Dynamic shared memory of the convolution kernels (templates/rudnn/conv/), in bytes: the one copy
// of each formula, used by the kernels' policies and by the host compiler (launch geometry, config
// checks). Same rules as rudnn/shared_memory.h (which it includes, for the block GEMM): plain C++, no
// prelude; under NVRTC/nvcc
// the functions are __host__ __device__, elsewhere plain constexpr; sizes are long long.
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define RUDNN_CONV_SHARED_MEMORY_FN __host__ __device__ constexpr inline
#else
#define RUDNN_CONV_SHARED_MEMORY_FN constexpr inline
#endif

#include "rudnn/shared_memory.h"

namespace rudnn::conv::shared_memory {

// ---- layout swap (layout.cuh): one 32 × 33 tile of elements (the padding column keeps the
// column-wise reads of the transpose free of bank conflicts).
RUDNN_CONV_SHARED_MEMORY_FN long long swap_last_two(long long elem_bytes) { return 32 * 33 * elem_bytes; }

// ---- direct kernels (direct.cuh). The host compiler (ConvToLaunch) calls these names.

// conv_wgrad_direct computes this many output channels per work item (they share each loaded input
// element): the largest of 4, 2, 1 that divides the output channels per group (the set must stay
// inside one group, whose input channels it reads).
RUDNN_CONV_SHARED_MEMORY_FN long long wgrad_direct_channel_set(long long out_channels_per_group) {
  return out_channels_per_group % 4 == 0 ? 4 : out_channels_per_group % 2 == 0 ? 2 : 1;
}
// conv_wgrad_direct work items: (O / set) · ceil(KD·KH·KW·C/G / 32), the exact natural grid.
RUDNN_CONV_SHARED_MEMORY_FN long long wgrad_direct_items(long long out_channels, long long groups, long long filter) {
  return out_channels / wgrad_direct_channel_set(out_channels / groups) * ((filter + 31) / 32);
}
// A grid from the weight count alone (O·KD·KH·KW·C/G): one block per 32 weights, within a factor of
// the channel set of wgrad_direct_items. Any grid is correct (the kernel strides over its items).
RUDNN_CONV_SHARED_MEMORY_FN long long wgrad_direct_blocks(long long weights) { return (weights + 31) / 32; }
// conv_wgrad_direct: every thread's partial sums for the tree, for the largest channel set (4), so
// that the size depends on the block alone.
RUDNN_CONV_SHARED_MEMORY_FN long long wgrad_direct(long long threads) { return threads * 4 * 4; }

// conv_bias_grad: 32 channels per work item; one float partial sum per thread for the tree.
RUDNN_CONV_SHARED_MEMORY_FN long long bias_grad_blocks(long long channels) { return (channels + 31) / 32; }
RUDNN_CONV_SHARED_MEMORY_FN long long bias_grad(long long threads) { return threads * 4; }

// ---- depthwise forward (depthwise.cuh), for a TileH × TileW output tile of `channels` input
// channels with channel multiplier `multiplier` (O = multiplier·C). Per kd slice:
//   the slice's weights as FP32 [KH·KW][multiplier][channels], then
//   the slice's input halo in T [halo_h][halo_w][channels],
//   halo = (tile − 1)·stride + (k − 1)·dilation + 1 per dim; rounded up to 16 bytes.
// Independent of KD: one kd slice is staged at a time.
RUDNN_CONV_SHARED_MEMORY_FN long long depthwise_threads(long long /*tile_h*/, long long /*tile_w*/,
                                                        long long /*channels*/) {
  return 256;  // channels lanes × 256 / channels pixel slots (channels divides 256)
}
// Channels per thread of the depthwise kernels (the forward, both backward passes): one 16-byte
// vector (16 / elem_bytes channels) where the multiplier is 1 and C and the tile's channels are whole
// vectors, else 1.
RUDNN_CONV_SHARED_MEMORY_FN long long depthwise_vector(long long c, long long o, long long channels,
                                                       long long elem_bytes) {
  const long long v = 16 / elem_bytes;
  return o == c && c % v == 0 && channels % v == 0 ? v : 1;
}
RUDNN_CONV_SHARED_MEMORY_FN long long depthwise_halo(long long tile, long long k, long long stride,
                                                     long long dilation) {
  return (tile - 1) * stride + (k - 1) * dilation + 1;
}
RUDNN_CONV_SHARED_MEMORY_FN long long depthwise(long long kh, long long kw, long long sh, long long sw, long long dh,
                                                long long dw, long long multiplier, long long tile_h, long long tile_w,
                                                long long channels, long long elem_bytes) {
  const long long weights = kh * kw * multiplier * channels * 4;
  const long long halo =
      depthwise_halo(tile_h, kh, sh, dh) * depthwise_halo(tile_w, kw, sw, dw) * channels * elem_bytes;
  return (weights + halo + 15) / 16 * 16;
}

// ---- depthwise data backward (depthwise_backward.cuh, conv_dgrad_depthwise), for a TileH × TileW
// tile of dx of `channels` input channels: the kd slice's weights as FP32 [KH·KW][multiplier]
// [channels], then the dy rows and columns the tile reads, T [halo_h][halo_w][multiplier][channels],
// dgrad halo = ((tile − 1) + (k − 1)·dilation) / stride + 1 per dim (the most output positions whose
// transposed gather lands in the tile); rounded up to 16 bytes. Independent of KD.
RUDNN_CONV_SHARED_MEMORY_FN long long depthwise_dgrad_halo(long long tile, long long k, long long stride,
                                                           long long dilation) {
  return ((tile - 1) + (k - 1) * dilation) / stride + 1;
}
RUDNN_CONV_SHARED_MEMORY_FN long long depthwise_dgrad(long long kh, long long kw, long long sh, long long sw,
                                                      long long dh, long long dw, long long multiplier,
                                                      long long tile_h, long long tile_w, long long channels,
                                                      long long elem_bytes) {
  const long long weights = kh * kw * multiplier * channels * 4;
  const long long halo = depthwise_dgrad_halo(tile_h, kh, sh, dh) * depthwise_dgrad_halo(tile_w, kw, sw, dw) *
                         multiplier * channels * elem_bytes;
  return (weights + halo + 15) / 16 * 16;
}
// ---- depthwise weight backward (conv_wgrad_depthwise): a thread's `vector` channel sums (one float
// each, depthwise_vector) for the slot tree. Work items ceil(O / channels) · splits; split sums FP32
// [splits][O][KD·KH·KW] (reduced by conv_split_reduce).
RUDNN_CONV_SHARED_MEMORY_FN long long depthwise_wgrad(long long threads, long long vector) {
  return threads * vector * 4;
}
RUDNN_CONV_SHARED_MEMORY_FN long long depthwise_wgrad_items(long long out_channels, long long channels,
                                                            long long splits) {
  return (out_channels + channels - 1) / channels * splits;
}

// ---- implicit GEMM (conv/implicit_gemm.cuh; gemm::BlockPolicy<BM, BN, BK, WarpsM, WarpsN, Stages, TC>,
// or gemm::WgmmaPolicy<BM, BN, BK, Stages> when `wgmma`)
// Every pass is one gemm::BlockEngine (rudnn::shared_memory::block_gemm) over elements of
// `element_bytes` (the tensor type T: 2 or 4; the same for the tensor-core and the plain path), or one
// gemm::WgmmaEngine (rudnn::shared_memory::block_gemm_wgmma, its operand layouts unpadded).
// fprop: A [BM][BK] (output pixels × taps·C), B [BN][BK] (output channels × taps·C).
RUDNN_CONV_SHARED_MEMORY_FN long long igemm_fprop(long long stages, long long block_m, long long block_n,
                                                  long long block_k, long long element_bytes, bool wgmma = false) {
  return wgmma ? rudnn::shared_memory::block_gemm_wgmma(stages, block_m, block_n, block_k, element_bytes)
               : rudnn::shared_memory::block_gemm(stages, block_m, block_n, block_k, element_bytes, false, false);
}

// dgrad: A [BM][BK] (input pixels × taps·O), B [BK][BN] (taps·O × input channels).
RUDNN_CONV_SHARED_MEMORY_FN long long igemm_dgrad(long long stages, long long block_m, long long block_n,
                                                  long long block_k, long long element_bytes, bool wgmma = false) {
  return wgmma ? rudnn::shared_memory::block_gemm_wgmma(stages, block_m, block_n, block_k, element_bytes)
               : rudnn::shared_memory::block_gemm(stages, block_m, block_n, block_k, element_bytes, false, true);
}

// wgrad: A [BK][BM] (output pixels × output channels), B [BK][BN] (output pixels × taps·C).
RUDNN_CONV_SHARED_MEMORY_FN long long igemm_wgrad(long long stages, long long block_m, long long block_n,
                                                  long long block_k, long long element_bytes, bool wgmma = false) {
  return wgmma ? rudnn::shared_memory::block_gemm_wgmma(stages, block_m, block_n, block_k, element_bytes)
               : rudnn::shared_memory::block_gemm(stages, block_m, block_n, block_k, element_bytes, true, true);
}

// conv_split_reduce needs none.

// ---- the data backward's stride phases (conv/dgrad_phase.cuh): S_D·S_H·S_W phases when that is at
// most kMaxDgradPhases (each phase's tile code is compiled separately), else one masked phase; the
// grid's M extent counts the largest phase's pixels per image, ⌈D/S_D⌉·⌈H/S_H⌉·⌈W/S_W⌉.
inline constexpr long long kMaxDgradPhases = 8;
RUDNN_CONV_SHARED_MEMORY_FN long long dgrad_phases(long long sd, long long sh, long long sw) {
  return sd * sh * sw <= kMaxDgradPhases ? sd * sh * sw : 1;
}
RUDNN_CONV_SHARED_MEMORY_FN long long dgrad_phase_pixels(long long d, long long h, long long w, long long sd,
                                                         long long sh, long long sw) {
  return dgrad_phases(sd, sh, sw) == 1 ? d * h * w : ((d + sd - 1) / sd) * ((h + sh - 1) / sh) * ((w + sw - 1) / sw);
}

}  // namespace rudnn::conv::shared_memory
