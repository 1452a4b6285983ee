#pragma once
// SwiGLU experts on plain cores (SPEC §3-§4 "Scalar" strategy): T = float, f16 or bf16, FP32
// accumulation. The rows are grouped per expert: expert e owns compact rows [offsets[e],
// offsets[e+1]) (moe/dispatch.cuh).
//   swiglu_gate_up_scalar: act[r, i] = silu(Σ_h x[r,h]·gate[e,i,h]) · (Σ_h x[r,h]·up[e,i,h])
//                          gate and up in one pass over x (two accumulator tiles), act stored as T.
//   expert_down_scalar:    out[r, h] = Σ_i act[r,i]·down[e,h,i]
// Weights row-major: gate, up [E, I, H]; down [E, H, I]. Both products are "C = A·Bᵀ" with A and B
// contiguous along the reduction dimension K, so one tile GEMM serves both.
//
// Tiling. A block computes a kBlockM × kBlockN output tile whose rows all belong to one expert; each
// expert's rows are tiled separately, so the M tiles are numbered linearly over experts:
//   total M tiles = Σ_e ceil(count_e / kBlockM)  (≤ ceil(n_rows / kBlockM) + experts).
// Launch geometry: grid.x = ceil(cols / kBlockN) (cols = inter for gate_up, hidden for down),
// grid.y = ceil(n_rows / kBlockM), block = Policy::kThreads. Blocks grid-stride over N tiles (x)
// and over the linear M tile index (y), so any grid is correct, including one smaller than that
// formula (and the formula's grid.y may be short of the total M tiles by up to `experts`).
//
// Shared memory (dynamic): one K-slice of the A and B tiles as FP32, k-major, rows padded by 4:
//   gate_up: Policy::kSharedBytesGateUp = ((kBlockM + 4) + 2·(kBlockN + 4))·kBlockK·4 bytes
//   down:    Policy::kSharedBytesDown   = ((kBlockM + 4) +   (kBlockN + 4))·kBlockK·4 bytes
// Any hidden, inter ≥ 1 (bounds-checked loads, zero padding); no alignment requirement.
//
// Parameters (launch order): gate_up: rows, offsets, gate, up, act, n_rows, experts, hidden, inter;
//                            down:    act, offsets, down, out, n_rows, experts, inter, hidden.
#include "rudnn/numeric.cuh"
#include "rudnn/shared_memory.h"
#include "rudnn/vector.cuh"  // load_floats

namespace rudnn::moe {

// Each thread owns a kThreadM × kThreadN register tile of consecutive rows and columns, so that it
// reads its A and B fragments from the k-major staged slices as 16-byte (or 8-byte) vectors.
template <int kBlockM, int kBlockN, int kBlockK, int kThreadM, int kThreadN>
struct ScalarGemmPolicy {
  static_assert(kBlockM % kThreadM == 0 && kBlockN % kThreadN == 0,
                "ScalarGemmPolicy: the thread tile must divide the block tile");
  static_assert(kBlockM % 4 == 0 && kBlockN % 4 == 0, "ScalarGemmPolicy: staged rows must stay 16-byte aligned");
  static constexpr int kBM = kBlockM, kBN = kBlockN, kBK = kBlockK, kTM = kThreadM, kTN = kThreadN;
  static constexpr int kThreadsN = kBlockN / kThreadN;  // threads along a tile row
  static constexpr int kThreadsM = kBlockM / kThreadM;
  static constexpr int kThreads = kThreadsM * kThreadsN;
  static_assert(kThreads % 32 == 0 && kThreads <= 1024,
                "ScalarGemmPolicy: a whole number of warps, at most 1024 threads");
  static_assert((kBlockM * kBlockK) % kThreads == 0 && (kBlockN * kBlockK) % kThreads == 0,
                "ScalarGemmPolicy: every thread stages the same number of tile elements");
  // Staged slices are k-major: slice[k][row] with rows padded by 4 floats. The padding keeps the
  // 16-byte alignment of the fragment reads and limits the transposing stores to 2-way bank
  // conflicts (the tile rows would otherwise all start in the same bank).
  static constexpr int kStrideA = kBlockM + 4;
  static constexpr int kStrideB = kBlockN + 4;
  static constexpr int kSharedBytesGateUp =
      static_cast<int>(shared_memory::experts_scalar(kBlockM, kBlockN, kBlockK, 2));
  static constexpr int kSharedBytesDown = static_cast<int>(shared_memory::experts_scalar(kBlockM, kBlockN, kBlockK, 1));
};

namespace scalar_detail {

// Maps the linear M tile index to (expert, first row, rows). The walk is monotone: a block's tile
// indices only grow, so the cursor resumes from the chunk of experts where the previous one was
// found. Every warp runs it redundantly on the same data (warp-uniform results, identical in all
// warps), which needs neither shared memory nor a barrier; 32 experts per step.
struct TileCursor {
  i64 chunk = 0;   // first expert of the current chunk of 32
  i64 before = 0;  // M tiles of the experts before `chunk`

  // Finds tile m (≥ every m asked before). False when m is past the last tile.
  template <int kBlockM>
  RUDNN_DEVICE bool find(const u32* offsets, i64 experts, i64 n_rows, i64 m, int lane, i64& expert, i64& row0,
                         i64& rows) {
    for (; chunk < experts; chunk += 32) {
      const i64 e = chunk + lane;
      u32 start = 0, end = 0;
      if (e < experts) {
        start = offsets[e];
        end = offsets[e + 1];
      }
      const u32 tiles = end > start ? (end - start + kBlockM - 1) / kBlockM : 0u;
      u32 inclusive = tiles;
      RUDNN_UNROLL
      for (int d = 1; d < 32; d *= 2) {
        const u32 up = __shfl_up_sync(0xffffffffu, inclusive, d);
        if (lane >= d) inclusive += up;
      }
      const unsigned hit = __ballot_sync(0xffffffffu, before + inclusive > m);
      if (hit != 0u) {
        const int owner = __ffs(static_cast<int>(hit)) - 1;
        expert = chunk + owner;
        const i64 first_tile = before + __shfl_sync(0xffffffffu, inclusive - tiles, owner);
        const i64 begin = __shfl_sync(0xffffffffu, start, owner);
        i64 stop = __shfl_sync(0xffffffffu, end, owner);
        if (stop > n_rows) stop = n_rows;  // offsets beyond the rows given: never read past them
        row0 = begin + (m - first_tile) * kBlockM;
        rows = stop - row0 < kBlockM ? stop - row0 : kBlockM;
        return true;
      }
      before += __shfl_sync(0xffffffffu, inclusive, 31);
    }
    return false;
  }
};

// Stages one K-slice of a tile: `count` valid rows of length K starting at `src` (row stride K),
// columns k0 .. k0 + kBK, as FP32 into dst[k·kStride + row]; rows and columns past the end are 0.
// Consecutive threads read consecutive k (coalesced global loads).
template <class P, int kRows, int kStride, class T>
RUDNN_DEVICE void stage_slice(float* dst, const T* src, i64 count, i64 K, i64 k0, int tid) {
  constexpr int kPerThread = kRows * P::kBK / P::kThreads;
  RUDNN_UNROLL
  for (int q = 0; q < kPerThread; ++q) {
    const int idx = tid + q * P::kThreads;
    const int r = idx / P::kBK;
    const int k = idx % P::kBK;
    float v = 0.0f;
    if (r < count && k0 + k < K) v = to_float(src[r * K + k0 + k]);
    dst[k * kStride + r] = v;
  }
}

// acc[m][i][j] += Σ_k A[row(i), k]·B_m[col(j), k] over one staged slice, for kMats B tiles that
// share the A tile. Thread (ty, tx) owns rows ty·kTM + i and columns tx·kTN + j.
template <class P, int kMats>
RUDNN_DEVICE void multiply_slice(float (&acc)[kMats][P::kTM][P::kTN], const float* a, const float* b, int ty, int tx) {
  RUDNN_UNROLL
  for (int k = 0; k < P::kBK; ++k) {
    float af[P::kTM];
    load_floats(af, a + k * P::kStrideA + ty * P::kTM);
    RUDNN_UNROLL
    for (int m = 0; m < kMats; ++m) {
      float bf[P::kTN];
      load_floats(bf, b + (m * P::kBK + k) * P::kStrideB + tx * P::kTN);
      RUDNN_UNROLL
      for (int i = 0; i < P::kTM; ++i) RUDNN_UNROLL
      for (int j = 0; j < P::kTN; ++j) acc[m][i][j] += af[i] * bf[j];
    }
  }
}

// One output tile: acc[m] = A·B_mᵀ over the whole K. A: a_rows rows at `a`; B_m: b_rows rows at
// b[m]; all rows of length K. Contains barriers: every thread of the block calls it together.
template <class P, int kMats, class T>
RUDNN_DEVICE void tile_gemm(float (&acc)[kMats][P::kTM][P::kTN], const T* a, i64 a_rows, const T* const (&b)[kMats],
                            i64 b_rows, i64 K, float* smem, int tid) {
  RUDNN_UNROLL
  for (int m = 0; m < kMats; ++m) RUDNN_UNROLL
  for (int i = 0; i < P::kTM; ++i) RUDNN_UNROLL
  for (int j = 0; j < P::kTN; ++j) acc[m][i][j] = 0.0f;
  float* sa = smem;                         // [kBK][kStrideA]
  float* sb = smem + P::kBK * P::kStrideA;  // kMats × [kBK][kStrideB]
  const int tx = tid % P::kThreadsN;
  const int ty = tid / P::kThreadsN;
  for (i64 k0 = 0; k0 < K; k0 += P::kBK) {
    __syncthreads();  // the previous slice (or tile) has been read by everyone
    stage_slice<P, P::kBM, P::kStrideA>(sa, a, a_rows, K, k0, tid);
    RUDNN_UNROLL
    for (int m = 0; m < kMats; ++m)
      stage_slice<P, P::kBN, P::kStrideB>(sb + m * P::kBK * P::kStrideB, b[m], b_rows, K, k0, tid);
    __syncthreads();
    multiply_slice<P, kMats>(acc, sa, sb, ty, tx);
  }
}

RUDNN_DEVICE float silu(float z) { return z / (1.0f + expf(-z)); }

// The two kernels differ only in their B matrices and epilogue; this walks the tiles for both.
// Epilogue(acc, row0, rows, n0, cols_in_tile, ty, tx) stores one finished tile.
template <class P, int kMats, class T, class Epilogue>
RUDNN_DEVICE void for_each_tile(const T* a, const u32* offsets, const T* const (&b)[kMats], i64 n_rows, i64 experts,
                                i64 K, i64 cols, Epilogue epilogue) {
  float* smem = dynamic_shared<float>();
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31;
  const i64 n_tiles = (cols + P::kBN - 1) / P::kBN;
  TileCursor cursor;
  for (i64 m = blockIdx.y;; m += gridDim.y) {
    i64 expert = 0, row0 = 0, rows = 0;
    if (!cursor.find<P::kBM>(offsets, experts, n_rows, m, lane, expert, row0, rows)) break;
    if (rows <= 0) continue;  // only when offsets run past n_rows (uniform: skips no barrier)
    for (i64 nt = blockIdx.x; nt < n_tiles; nt += gridDim.x) {
      const i64 n0 = nt * P::kBN;
      const i64 ncols = cols - n0 < P::kBN ? cols - n0 : P::kBN;
      const T* bt[kMats];
      RUDNN_UNROLL
      for (int q = 0; q < kMats; ++q) bt[q] = b[q] + (expert * cols + n0) * K;
      float acc[kMats][P::kTM][P::kTN];
      tile_gemm<P, kMats>(acc, a + row0 * K, rows, bt, ncols, K, smem, tid);
      epilogue(acc, row0, rows, n0, ncols, tid / P::kThreadsN, tid % P::kThreadsN);
    }
  }
}

}  // namespace scalar_detail

template <class T, class Policy>
RUDNN_DEVICE void swiglu_gate_up_scalar(const T* rows, const u32* offsets, const T* gate, const T* up, T* act,
                                        i64 n_rows, i64 experts, i64 hidden, i64 inter) {
  using P = Policy;
  const T* const b[2] = {gate, up};
  scalar_detail::for_each_tile<P, 2>(
      rows, offsets, b, n_rows, experts, hidden, inter,
      [&](const float(&acc)[2][P::kTM][P::kTN], i64 row0, i64 count, i64 n0, i64 ncols, int ty, int tx) {
        RUDNN_UNROLL
        for (int i = 0; i < P::kTM; ++i) {
          const int r = ty * P::kTM + i;
          RUDNN_UNROLL
          for (int j = 0; j < P::kTN; ++j) {
            const int c = tx * P::kTN + j;
            if (r < count && c < ncols)
              act[(row0 + r) * inter + n0 + c] = from_float<T>(scalar_detail::silu(acc[0][i][j]) * acc[1][i][j]);
          }
        }
      });
}

template <class T, class Policy>
RUDNN_DEVICE void expert_down_scalar(const T* act, const u32* offsets, const T* down, T* out, i64 n_rows, i64 experts,
                                     i64 inter, i64 hidden) {
  using P = Policy;
  const T* const b[1] = {down};
  scalar_detail::for_each_tile<P, 1>(
      act, offsets, b, n_rows, experts, inter, hidden,
      [&](const float(&acc)[1][P::kTM][P::kTN], i64 row0, i64 count, i64 n0, i64 ncols, int ty, int tx) {
        RUDNN_UNROLL
        for (int i = 0; i < P::kTM; ++i) {
          const int r = ty * P::kTM + i;
          RUDNN_UNROLL
          for (int j = 0; j < P::kTN; ++j) {
            const int c = tx * P::kTN + j;
            if (r < count && c < ncols) out[(row0 + r) * hidden + n0 + c] = from_float<T>(acc[0][i][j]);
          }
        }
      });
}

}  // namespace rudnn::moe
