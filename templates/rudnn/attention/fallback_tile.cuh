#pragma once
// A block tile of C = A·B on plain cores with FP32 staging, the one GEMM shape both Fallback
// products need (scores = Q·Kᵀ over D, output = P·V over keys). Sources of any layout are read through
// loader functors, so the same tile serves row-major Q and K (contiguous along the reduction) and
// V (contiguous along the output columns).
//
// Each K-slice of kBK is staged k-major, slice[k][row], rows padded by 4 floats: the padding keeps
// 16-byte alignment of the fragment reads and breaks the bank pattern of the transposing stores.
// Thread (ty, tx) owns the kTM × kTN register tile of rows ty·kTM + i, columns tx·kTN + j.
#include "rudnn/numeric.cuh"
#include "rudnn/shared_memory.h"
#include "rudnn/vector.cuh"  // load_floats

namespace rudnn::attention {

template <int kBlockM, int kBlockN, int kBlockK, int kThreadM, int kThreadN>
struct FallbackTilePolicy {
  static_assert(kBlockM % kThreadM == 0 && kBlockN % kThreadN == 0,
                "FallbackTilePolicy: the thread tile must divide the block tile");
  static_assert(kBlockM % 4 == 0 && kBlockN % 4 == 0, "FallbackTilePolicy: staged rows stay 16-byte aligned");
  static_assert((kBlockK & (kBlockK - 1)) == 0, "FallbackTilePolicy: kBlockK is a power of two");
  static constexpr int kBM = kBlockM, kBN = kBlockN, kBK = kBlockK, kTM = kThreadM, kTN = kThreadN;
  static constexpr int kThreadsN = kBlockN / kThreadN;
  static constexpr int kThreadsM = kBlockM / kThreadM;
  static constexpr int kThreads = kThreadsM * kThreadsN;
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "FallbackTilePolicy: whole warps, at most 1024 threads");
  static_assert((kBlockM * kBlockK) % kThreads == 0 && (kBlockN * kBlockK) % kThreads == 0,
                "FallbackTilePolicy: every thread stages the same number of elements");
  static constexpr int kStrideA = kBlockM + 4;
  static constexpr int kStrideB = kBlockN + 4;
  // Dynamic shared memory of every kernel built on this tile (bytes).
  static constexpr int kSharedBytes = static_cast<int>(shared_memory::fallback_tile(kBlockM, kBlockN, kBlockK));
};

// Stages rows [0, kRows) × k ∈ [k0, k0 + kBK) of a source into dst[k·kStride + row] as FP32.
// load(row, k) returns the element (0 past the source's ends). kKContiguous says which index is
// contiguous in global memory, so that consecutive threads read consecutive addresses.
template <class P, int kRows, int kStride, bool kKContiguous, class Load>
RUDNN_DEVICE void stage_slice(float* dst, i64 k0, int tid, const Load& load) {
  constexpr int kPerThread = kRows * P::kBK / P::kThreads;
  RUDNN_UNROLL
  for (int s = 0; s < kPerThread; ++s) {
    const int idx = tid + s * P::kThreads;
    const int r = kKContiguous ? idx / P::kBK : idx % kRows;
    const int k = kKContiguous ? idx % P::kBK : idx / kRows;
    dst[k * kStride + r] = load(r, k0 + k);
  }
}

// acc[i][j] += Σ_k A[row i, k]·B[col j, k] over one staged slice.
template <class P>
RUDNN_DEVICE void multiply_slice(float (&acc)[P::kTM][P::kTN], const float* a, const float* b, int ty, int tx) {
  RUDNN_UNROLL
  for (int k = 0; k < P::kBK; ++k) {
    float af[P::kTM];
    float bf[P::kTN];
    load_floats(af, a + k * P::kStrideA + ty * P::kTM);
    load_floats(bf, b + k * P::kStrideB + tx * P::kTN);
    RUDNN_UNROLL
    for (int i = 0; i < P::kTM; ++i) RUDNN_UNROLL
    for (int j = 0; j < P::kTN; ++j) acc[i][j] += af[i] * bf[j];
  }
}

// One tile: acc = Σ_{k < K} A[row, k]·B[col, k], A and B read through their loaders (which return 0
// out of range). Contains barriers: every thread of the block calls it with the same K.
template <class P, bool kBKContiguous, class LoadA, class LoadB>
RUDNN_DEVICE void tile_product(float (&acc)[P::kTM][P::kTN], i64 K, float* smem, int tid, const LoadA& load_a,
                               const LoadB& load_b) {
  RUDNN_UNROLL
  for (int i = 0; i < P::kTM; ++i) RUDNN_UNROLL
  for (int j = 0; j < P::kTN; ++j) acc[i][j] = 0.0f;
  float* sa = smem;                         // [kBK][kStrideA]
  float* sb = smem + P::kBK * P::kStrideA;  // [kBK][kStrideB]
  const int tx = tid % P::kThreadsN;
  const int ty = tid / P::kThreadsN;
  for (i64 k0 = 0; k0 < K; k0 += P::kBK) {
    __syncthreads();  // everyone has finished reading the previous slice (or tile)
    stage_slice<P, P::kBM, P::kStrideA, true>(sa, k0, tid, load_a);
    stage_slice<P, P::kBN, P::kStrideB, kBKContiguous>(sb, k0, tid, load_b);
    __syncthreads();
    multiply_slice<P>(acc, sa, sb, ty, tx);
  }
}

}  // namespace rudnn::attention
