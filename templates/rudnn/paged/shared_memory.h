#pragma once
// Dynamic shared memory of the paged attention kernels, in bytes (same rules as
// rudnn/shared_memory.h: plain constexpr C++, __host__ __device__ under NVRTC).
#include "rudnn/shared_memory.h"

namespace rudnn::shared_memory {

// paged_attention_unit (paged/unit.cuh): Q [BM] and K [BN] rows of flash_unit_stride_qk(D + Pr)
// floats (the rope columns follow the head columns), P [BM][BN + 4], and V [BN][Dv] unless the
// values are the keys' first Dv columns (MLA: the latent rows).
RUDNN_SHARED_MEMORY_FN long long paged_unit(long long block_m, long long block_n, long long head_dim,
                                            long long rope_dim, long long value_dim, bool value_from_key) {
  return 4 * ((block_m + block_n) * flash_unit_stride_qk(head_dim + rope_dim) + block_m * (block_n + 4) +
              (value_from_key ? 0 : block_n * value_dim));
}

// paged_mla_mma (paged/mla_mma.cuh): Q [64] and 2 stages × K [BN] rows of R + Pr + 8 16-bit
// elements (latent columns, then rope), P [64][BN + 8] 16-bit, and 3 × 64 floats (the two key
// halves' row maxima or sums, and the rows' rescale factors).
RUDNN_SHARED_MEMORY_FN long long paged_mla_mma(long long block_n, long long latent_dim, long long rope_dim) {
  return (64 + 2 * block_n) * (latent_dim + rope_dim + 8) * 2 + 64 * (block_n + 8) * 2 + 3 * 64 * 4;
}

// paged_mla_wgmma (paged/mla_wgmma.cuh): Q [64] and 2 stages × K [64] rows of R + Pr 16-bit
// elements in the swizzled layout (no padding), P [64][64] 16-bit swizzled, and 3 × 64 floats (the
// two key halves' row maxima or sums, and the rows' rescale factors), plus the alignment slack.
RUDNN_SHARED_MEMORY_FN long long paged_mla_wgmma(long long latent_dim, long long rope_dim) {
  return (64 + 2 * 64) * (latent_dim + rope_dim) * 2 + 64 * 64 * 2 + 3 * 64 * 4 + kWgmmaAlignmentSlack;
}

// paged_attention_backward_mma (paged/backward_mma.cuh): Q and dO [64] rows, 2 stages × (K, V)
// [BN] rows, all of D + 8 16-bit elements; P and dS [64][BN + 8] 16-bit.
RUDNN_SHARED_MEMORY_FN long long paged_backward_mma(long long block_n, long long head_dim) {
  return (2 * 64 + 4 * block_n) * (head_dim + 8) * 2 + 2 * 64 * (block_n + 8) * 2;
}

// paged_mla_backward_mma (paged/mla_backward_mma.cuh): Q and dO [32] rows and 2 stages × K [32]
// rows, all of R + Pr + 8 16-bit elements; P and dS' [32][32 + 8] 16-bit; dP [32][32], the two key
// halves' (max, sum, dot) and the rows' L and δ, FP32.
RUDNN_SHARED_MEMORY_FN long long paged_mla_backward_mma(long long latent_dim, long long rope_dim) {
  return 4 * 32 * (latent_dim + rope_dim + 8) * 2 + 2 * 32 * (32 + 8) * 2 + (32 * 32 + 8 * 32) * 4;
}

// paged_mla_backward_history_mma (paged/mla_backward_mma.cuh): the key tile [32], Q and dO [32]
// rows, all of R + Pr + 8 16-bit elements; P and dS' [32][32 + 8] 16-bit; dP [32][32] FP32.
RUDNN_SHARED_MEMORY_FN long long paged_mla_history_mma(long long latent_dim, long long rope_dim) {
  return 3 * 32 * (latent_dim + rope_dim + 8) * 2 + 2 * 32 * (32 + 8) * 2 + 32 * 32 * 4;
}

// paged_attention_backward_history_mma (paged/backward_mma.cuh): K and V [32] rows and 2 stages ×
// (Q, dO) [64] rows, all of D + 8 16-bit elements; P and dS [64][32 + 8] 16-bit.
RUDNN_SHARED_MEMORY_FN long long paged_history_mma(long long head_dim) {
  return (2 * 32 + 4 * 64) * (head_dim + 8) * 2 + 2 * 64 * (32 + 8) * 2;
}

// paged_attention_backward_history with row caching (paged/backward.cuh): chunks of staged (row, head)
// items, each q (32·key_per_lane floats), dO (32·value_per_lane) then lse and δ; up to 32 KiB of
// items and at least one. Without row caching: none.
RUDNN_SHARED_MEMORY_FN long long paged_history_item_floats(long long key_per_lane, long long value_per_lane) {
  return 32 * key_per_lane + 32 * value_per_lane + 2;
}
RUDNN_SHARED_MEMORY_FN long long paged_history_stage_items(long long key_per_lane, long long value_per_lane) {
  return 8192 / paged_history_item_floats(key_per_lane, value_per_lane) > 0
             ? 8192 / paged_history_item_floats(key_per_lane, value_per_lane)
             : 1;
}
RUDNN_SHARED_MEMORY_FN long long paged_history(long long key_per_lane, long long value_per_lane, bool cache_rows) {
  return cache_rows ? 4 * paged_history_stage_items(key_per_lane, value_per_lane) *
                          paged_history_item_floats(key_per_lane, value_per_lane)
                    : 0;
}

}  // namespace rudnn::shared_memory
