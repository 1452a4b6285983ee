#pragma once
// PROVISIONAL (replaced when the conv kernels land): the names the compiler calls.
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define RUDNN_CONV_SMEM_FN __host__ __device__ constexpr inline
#else
#define RUDNN_CONV_SMEM_FN constexpr inline
#endif
namespace rudnn::conv::shared_memory {
RUDNN_CONV_SMEM_FN long long swap_last_two(long long elem) { return 32 * 33 * elem; }
RUDNN_CONV_SMEM_FN long long depthwise_threads(long long, long long, long long) { return 256; }
RUDNN_CONV_SMEM_FN long long depthwise(long long, long long, long long, long long, long long, long long, long long,
                                       long long, long long, long long, long long) { return 0; }
RUDNN_CONV_SMEM_FN long long igemm_fprop(long long, long long, long long, long long, bool, long long) { return 0; }
RUDNN_CONV_SMEM_FN long long igemm_dgrad(long long, long long, long long, long long, bool, long long) { return 0; }
RUDNN_CONV_SMEM_FN long long igemm_wgrad(long long, long long, long long, long long, bool, long long) { return 0; }
RUDNN_CONV_SMEM_FN long long wgrad_direct_blocks(long long weights) { return weights; }
RUDNN_CONV_SMEM_FN long long wgrad_direct(long long threads) { return threads * 4; }
RUDNN_CONV_SMEM_FN long long bias_grad_blocks(long long channels) { return channels; }
RUDNN_CONV_SMEM_FN long long bias_grad(long long threads) { return threads * 4; }
}  // namespace rudnn::conv::shared_memory
