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

}  // namespace rudnn::shared_memory
