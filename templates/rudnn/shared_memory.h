#pragma once
// Dynamic shared memory of every kernel template, in bytes: the one copy of each formula, used by
// the templates' policies (kSharedBytes, shared_bytes) and by the host compiler (launch geometry,
// config checks, contracts: dialect/*Config, compiler/Conversion, core/contracts). So it is plain
// C++: no prelude, no includes, no CUDA-only construct; under NVRTC/nvcc the functions are
// __host__ __device__, elsewhere plain constexpr. Host code reaches it as "rudnn/shared_memory.h"
// (templates/ is on rudnn_core's include path); NVRTC gets it embedded like every template.
// Sizes are long long (no <cstdint> under NVRTC); the host's std::int64_t converts.
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define RUDNN_SHARED_MEMORY_FN __host__ __device__ constexpr inline
#else
#define RUDNN_SHARED_MEMORY_FN constexpr inline
#endif

namespace rudnn::shared_memory {

// ---- attention (templates/rudnn/attention/)

// flash_attention_mma (flash_mma_smem.cuh): Q [BM] + 2 stages × (K, V) [BN] rows of D + 8 16-bit
// elements.
RUDNN_SHARED_MEMORY_FN long long flash_mma(long long block_m, long long block_n, long long head_dim) {
  return (block_m + 4 * block_n) * (head_dim + 8) * 2;
}

// Every kernel on Hopper's warpgroup MMA keeps its swizzled tiles at 1024-byte boundaries of the
// shared window (the 128-byte swizzle's atom; tile::swizzle_aligned), wherever the dynamic shared
// memory starts: it asks for this much more than its tiles take.
inline constexpr long long kWgmmaAlignmentSlack = 1024;

// flash_attention_wgmma (flash_wgmma.cuh): Q [BM] + 2 stages × (K, V) [BN] rows of D 16-bit elements
// in the swizzled layouts (no padding), plus the alignment slack.
RUDNN_SHARED_MEMORY_FN long long flash_wgmma(long long block_m, long long block_n, long long head_dim) {
  return (block_m + 4 * block_n) * head_dim * 2 + kWgmmaAlignmentSlack;
}

// flash_attention_unit: Q [BM] and K [BN] rows of stride_qk(D) floats, P [BM][BN + 4], V [BN][Dv].
RUDNN_SHARED_MEMORY_FN long long flash_unit_stride_qk(long long head_dim) { return (head_dim + 3) / 4 * 4 + 4; }
RUDNN_SHARED_MEMORY_FN long long flash_unit(long long block_m, long long block_n, long long head_dim,
                                            long long value_dim) {
  return 4 * ((block_m + block_n) * flash_unit_stride_qk(head_dim) + block_m * (block_n + 4) + block_n * value_dim);
}

// Fallback scores / weighted sum (fallback_tile.cuh): one k-slice of A [BM + 4] and B [BN + 4] FP32.
RUDNN_SHARED_MEMORY_FN long long fallback_tile(long long block_m, long long block_n, long long block_k) {
  return ((block_m + 4) + (block_n + 4)) * block_k * 4;
}

// Fallback softmax: rows served by several warps reduce through 2 × (warps per row) floats per row.
RUDNN_SHARED_MEMORY_FN long long fallback_softmax(long long threads_per_row, long long rows_per_block) {
  return threads_per_row > 32 ? rows_per_block * 2 * (threads_per_row / 32) * 4 : 0;
}

// ---- block GEMM (gemm/block_engine.cuh; BlockPolicy<BM, BN, BK, WarpsM, WarpsN, Stages, TC>)
// `stages` pipeline stages of one A and one B operand tile of `element_bytes` elements (2 or 4). A tile
// stored with its rows along M (or N) has `block_k` columns; one stored with its rows along K
// (a_k_major / b_k_major) has `block_m` (or `block_n`). Every row is padded by 16 bytes, so that
// ldmatrix rows stay aligned and conflict-free.
RUDNN_SHARED_MEMORY_FN long long block_gemm(long long stages, long long block_m, long long block_n, long long block_k,
                                            long long element_bytes, bool a_k_major, bool b_k_major) {
  const long long pad = 16 / element_bytes;
  const long long a = a_k_major ? block_k * (block_m + pad) : block_m * (block_k + pad);
  const long long b = b_k_major ? block_k * (block_n + pad) : block_n * (block_k + pad);
  return stages * (a + b) * element_bytes;
}

// ---- warpgroup-MMA block GEMM (gemm/wgmma_engine.cuh; WgmmaPolicy<BM, BN, BK, Stages>, sm_90a)
// `stages` stages of an A and a B tile of 16-bit elements in the 128-byte-swizzled layouts (no
// padding: the swizzle spreads the banks), plus the alignment slack (kWgmmaAlignmentSlack).
RUDNN_SHARED_MEMORY_FN long long block_gemm_wgmma(long long stages, long long block_m, long long block_n,
                                                  long long block_k, long long element_bytes) {
  return stages * (block_m + block_n) * block_k * element_bytes + kWgmmaAlignmentSlack;
}

// ---- MoE (templates/rudnn/moe/)

// Grouped GEMM of the experts, `operands` B matrices (gate_up: 2, down: 1).
//   scalar:       one k-slice of A and each B as FP32, rows padded by 4
//   tensor cores: `stages` cp.async stages of A and each B, rows of BK + 8 16-bit elements
RUDNN_SHARED_MEMORY_FN long long experts_scalar(long long block_m, long long block_n, long long block_k,
                                                long long operands) {
  return ((block_m + 4) + operands * (block_n + 4)) * block_k * 4;
}
RUDNN_SHARED_MEMORY_FN long long experts_mma(long long stages, long long block_m, long long block_n, long long block_k,
                                             long long operands) {
  return stages * (block_m + operands * block_n) * (block_k + 8) * 2;
}
//   wgmma:        `stages` stages of A and each B in the swizzled layouts (block_gemm_wgmma)
RUDNN_SHARED_MEMORY_FN long long experts_wgmma(long long stages, long long block_m, long long block_n,
                                               long long block_k, long long operands) {
  return block_gemm_wgmma(stages, block_m, operands * block_n, block_k, 2);
}

// swiglu_backward_hidden_mma (moe/experts_backward_mma.cuh): the fused gate/up product, then dY·down
// (A [BM][BK], B K-major [BK][BN]) in the same stages.
RUDNN_SHARED_MEMORY_FN long long experts_backward_hidden_mma(long long stages, long long block_m, long long block_n,
                                                             long long block_k) {
  const long long gate_up = experts_mma(stages, block_m, block_n, block_k, 2);
  const long long down = block_gemm(stages, block_m, block_n, block_k, 2, false, true);
  return gate_up > down ? gate_up : down;
}

// The same pass on wgmma: the forward's gate/up product (A and both B per stage), then dY·down in
// fewer bytes.
RUDNN_SHARED_MEMORY_FN long long experts_backward_hidden_wgmma(long long stages, long long block_m, long long block_n,
                                                               long long block_k) {
  return experts_wgmma(stages, block_m, block_n, block_k, 2);
}

// expert_row_order (moe/experts_backward_scalar.cuh): one hit count per warp, rounded up to 16 bytes.
RUDNN_SHARED_MEMORY_FN long long expert_row_order(long long threads) { return (threads / 32 * 4 + 15) / 16 * 16; }

// router_backward (moe/router_weights.cuh): per warp 64 h_j (float) and 64 i_j (8-byte) entries.
RUDNN_SHARED_MEMORY_FN long long router_backward(long long warps) { return warps * 64 * (4 + 8); }

// dispatch_rank: one counter per expert plus offsets[0], rounded up to 16 bytes.
RUDNN_SHARED_MEMORY_FN long long dispatch_rank(long long experts) { return ((experts + 1) * 4 + 15) / 16 * 16; }

// route_sigmoid_grouped: per row slot, experts corrected scores + 2 × groups group scores (floats).
RUDNN_SHARED_MEMORY_FN long long route_grouped(long long rows_per_block, long long experts, long long groups) {
  return rows_per_block * (experts + 2 * groups) * 4;
}

// ---- normalization (templates/rudnn/norm/row_norm.cuh): rows served by several warps reduce
// through 2 × (warps per row) floats per row.
RUDNN_SHARED_MEMORY_FN long long row_norm(long long rows_per_block, long long threads_per_row) {
  return rows_per_block * (threads_per_row / 32 > 1 ? threads_per_row / 32 : 1) * 2 * 4;
}

// ---- gated delta rule (templates/rudnn/gated_delta/)

// gated_delta_recurrent: `steps` staged time steps of keys and scaled queries [K_max = 16·warps·rows],
// values [32], β and log_decay, plus a cross-warp reduction of 2·warps·8·9 floats when warps > 1.
RUDNN_SHARED_MEMORY_FN long long gated_delta_recurrent(long long warps, long long rows_per_thread, long long steps) {
  return 4 * (steps * (2 * (4 * warps * rows_per_thread) + 32 + 2) + (warps > 1 ? 2 * warps * 8 * 9 : 0));
}

// unit_lower_inverse's scratch for a C×C matrix, in floats: the ⌈C/16⌉ − 1 blocks of 16×16 at
// distance 1 (the most of any distance).
RUDNN_SHARED_MEMORY_FN long long gated_delta_inverse_scratch(long long c) {
  return c > 16 ? (c + 15) / 16 * 16 * 16 - 256 : 0;
}

// The row stride (floats) of gated_delta_chunked's values buffer: BV, and BV + 4 on tensor cores
// (split_b_pair reads its rows 2(l%4) apart by column l/4: + 4 puts the 32 lanes on 32 banks).
RUDNN_SHARED_MEMORY_FN long long gated_delta_values_ld(long long bv, bool tensor_core) {
  return tensor_core ? bv + 4 : bv;
}

// gated_delta_chunked's values buffer of C rows of `ld` floats (values, then the inverse's scratch,
// then U): max(C·ld, gated_delta_inverse_scratch(C)) floats (C·ld unless ld < 16).
RUDNN_SHARED_MEMORY_FN long long gated_delta_chunk_values(long long c, long long ld) {
  return c * ld > gated_delta_inverse_scratch(c) ? c * ld : gated_delta_inverse_scratch(c);
}

// gated_delta_chunked for chunk C, key dim K and a V slice of BV columns (chunked.cuh's header):
//   plain:        8·C + 4·(2·C·K + V + 2·C·BV + C² + K·BV + 3·C),  V = gated_delta_chunk_values(C, BV)
//   tensor cores: 8·Cp + 4·Cp·(Kr + 8) + 6·Kr·(BV + 8) + 4·(V + 2·Cp·BV + Cp² + K·BV + 3·Cp + 64),
//                 Cp = 16⌈C/16⌉, Kr = 16⌈K/16⌉, V = gated_delta_chunk_values(Cp, BV + 4)
//   (the values' row stride is gated_delta_values_ld)
RUDNN_SHARED_MEMORY_FN long long gated_delta_chunk(long long c, long long k, long long bv, bool tensor_core) {
  if (!tensor_core)
    return 8 * c + 4 * (2 * c * k + gated_delta_chunk_values(c, gated_delta_values_ld(bv, false)) + 2 * c * bv + c * c +
                        k * bv + 3 * c);
  const long long cp = (c + 15) / 16 * 16, kr = (k + 15) / 16 * 16;
  return 8 * cp + 4 * cp * (kr + 8) + 6 * kr * (bv + 8) +
         4 * (gated_delta_chunk_values(cp, gated_delta_values_ld(bv, true)) + 2 * cp * bv + cp * cp + k * bv + 3 * cp +
              64);
}

}  // namespace rudnn::shared_memory
