#pragma once
// Dynamic shared memory of the convolution kernels (templates/rudnn/conv/), in bytes: the one copy
// of each formula, used by the kernels' policies and by the host compiler (launch geometry, config
// checks). Same rules as rudnn/shared_memory.h: plain C++, no prelude, no includes; under NVRTC/nvcc
// the functions are __host__ __device__, elsewhere plain constexpr; sizes are long long.
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define RUDNN_CONV_SHARED_MEMORY_FN __host__ __device__ constexpr inline
#else
#define RUDNN_CONV_SHARED_MEMORY_FN constexpr inline
#endif

namespace rudnn::conv::shared_memory {

// ---- layout swap (layout.cuh): one 32 × 33 tile of elements (the padding column keeps the
// column-wise reads of the transpose free of bank conflicts).
RUDNN_CONV_SHARED_MEMORY_FN long long swap_last_two(long long elem_bytes) { return 32 * 33 * elem_bytes; }

// ---- direct kernels (direct.cuh)

// conv_wgrad_direct computes this many output channels per block (they share each loaded input
// element): the largest of 4, 2, 1 that divides the output channels per group (the set must stay
// inside one group, whose input channels it reads).
RUDNN_CONV_SHARED_MEMORY_FN long long direct_wgrad_channel_set(long long out_channels_per_group) {
  return out_channels_per_group % 4 == 0 ? 4 : out_channels_per_group % 2 == 0 ? 2 : 1;
}
// conv_wgrad_direct: every thread's partial sums (channel set × threads floats) for the tree.
RUDNN_CONV_SHARED_MEMORY_FN long long direct_wgrad(long long threads, long long out_channels_per_group) {
  return threads * direct_wgrad_channel_set(out_channels_per_group) * 4;
}
// conv_bias_grad: one float partial sum per thread for the tree.
RUDNN_CONV_SHARED_MEMORY_FN long long direct_bias_grad(long long threads) { return threads * 4; }

// ---- depthwise forward (depthwise.cuh), for a TileH × TileW output tile of `channels` input
// channels with channel multiplier `multiplier`:
//   the block's weights as FP32 [KD·KH·KW][multiplier][channels], then
//   one kd slice of the input halo in T [halo_h][halo_w][channels],
//   halo = (tile − 1)·stride + (k − 1)·dilation + 1 per dim; rounded up to 16 bytes.
RUDNN_CONV_SHARED_MEMORY_FN long long depthwise_halo(long long tile, long long k, long long stride,
                                                     long long dilation) {
  return (tile - 1) * stride + (k - 1) * dilation + 1;
}
RUDNN_CONV_SHARED_MEMORY_FN long long depthwise(long long kd, long long kh, long long kw, long long sh, long long sw,
                                                long long dh, long long dw, long long multiplier, long long tile_h,
                                                long long tile_w, long long channels, long long elem_bytes) {
  const long long weights = kd * kh * kw * multiplier * channels * 4;
  const long long halo =
      depthwise_halo(tile_h, kh, sh, dh) * depthwise_halo(tile_w, kw, sw, dw) * channels * elem_bytes;
  return (weights + halo + 15) / 16 * 16;
}

}  // namespace rudnn::conv::shared_memory
