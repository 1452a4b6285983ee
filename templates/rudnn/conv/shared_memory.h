#pragma once
// Dynamic shared memory of the convolution kernel templates (templates/rudnn/conv/), in bytes: the one
// copy of each formula, used by the templates' policies and by the host compiler (launch geometry,
// config checks). Plain C++ like rudnn/shared_memory.h: no prelude, no includes; __host__ __device__
// under NVRTC/nvcc, plain constexpr elsewhere. Sizes are long long (no <cstdint> under NVRTC).
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define RUDNN_CONV_SHARED_MEMORY_FN __host__ __device__ constexpr inline
#else
#define RUDNN_CONV_SHARED_MEMORY_FN constexpr inline
#endif

namespace rudnn::conv::shared_memory {

// ---- implicit GEMM (conv/implicit_gemm.cuh; IgemmPolicy<BM, BN, BK, WarpsM, WarpsN, Stages, TC>)
// Every pass keeps `stages` pipeline stages of one A and one B operand tile of elements of
// `element_bytes` (the tensor type T: 2 or 4; the same for the tensor-core and the plain path). A
// tile stored with its rows along the GEMM's M (or N) index has `block_k` columns; one stored with
// its rows along K has `block_m` (or `block_n`) columns. Every row is padded by 16 bytes
// (16 / element_bytes elements) so that ldmatrix rows stay aligned and conflict-free.
RUDNN_CONV_SHARED_MEMORY_FN long long igemm_row_pad(long long element_bytes) { return 16 / element_bytes; }

// fprop: A [BM][BK] (output pixels × taps·C), B [BN][BK] (output channels × taps·C).
RUDNN_CONV_SHARED_MEMORY_FN long long igemm_fprop(long long stages, long long block_m, long long block_n,
                                                  long long block_k, long long element_bytes) {
  return stages * (block_m + block_n) * (block_k + igemm_row_pad(element_bytes)) * element_bytes;
}

// dgrad: A [BM][BK] (input pixels × taps·O), B [BK][BN] (taps·O × input channels).
RUDNN_CONV_SHARED_MEMORY_FN long long igemm_dgrad(long long stages, long long block_m, long long block_n,
                                                  long long block_k, long long element_bytes) {
  const long long pad = igemm_row_pad(element_bytes);
  return stages * (block_m * (block_k + pad) + block_k * (block_n + pad)) * element_bytes;
}

// wgrad: A [BK][BM] (output pixels × output channels), B [BK][BN] (output pixels × taps·C).
RUDNN_CONV_SHARED_MEMORY_FN long long igemm_wgrad(long long stages, long long block_m, long long block_n,
                                                  long long block_k, long long element_bytes) {
  const long long pad = igemm_row_pad(element_bytes);
  return stages * block_k * (block_m + block_n + 2 * pad) * element_bytes;
}

// conv_wgrad_reduce needs none.

}  // namespace rudnn::conv::shared_memory
