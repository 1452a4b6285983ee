#pragma once
// The SwiGLU experts' backward on plain cores (SPEC §10 "Scalar"), FP32 accumulation. For expert e's
// rows X (compact rows [offsets[e], offsets[e+1]), moe/dispatch.cuh) with the forward
//   A = X·gateᵀ, B = X·upᵀ, Hh = silu(A) ⊙ B, Y = Hh·downᵀ      gate, up [E, I, H]; down [E, H, I]
// and the output gradient dY:
//   swiglu_backward_hidden_scalar  dHh = dY·down (K = H), with A and B recomputed (K = H), then
//                                  dA = dHh ⊙ B ⊙ silu'(A), dB = dHh ⊙ silu(A), Hh   → FP32 [N, I]
//   swiglu_backward_input_scalar   dX = dA·gate + dB·up (K = I)                      → T [N, H]
//   expert_row_order               order[offsets[e] + i] = expert e's i-th row in token order
//   experts_weight_grad_scalar     out_e = P_eᵀ·Q_e summed over the expert's rows in token order:
//                                  dgate = dAᵀX, dup = dBᵀX [E, I, H]; ddown = dYᵀHh [E, H, I] (FP32)
// The pre-activations are recomputed, not saved by the forward (forward_dispatched_training keeps
// only its inputs): no activation memory between the passes, one gate/up GEMM more in backward.
// The weight gradients reduce each expert's rows in token order (no atomics), whatever order the
// dispatch's atomic ranking gave the rows: the same bits for the same tokens, step after step; an
// expert with no rows gets zeros.
//
// Tiling reuses the forward's ScalarGemmPolicy, TileCursor and multiply_slice (moe/experts_scalar.cuh).
// Operands the forward never reads along K — down in dHh (K = H is its row index), gate and up in
// dX (K = I), and both operands of the weight gradients (K = rows) — are staged "k-major" straight
// from their row-major storage (stage_kmajor: consecutive threads read consecutive columns).
//
// Launch: hidden and input as the forward's kernels (grid.x = column tiles, grid.y = row tiles, any
// grid is correct); weight_grad: grid.x = ⌈M / kBM⌉·⌈K2 / kBN⌉, grid.y = E (both strided);
// expert_row_order: kThreads threads, grid E (strided), shared_memory::expert_row_order(kThreads).
// Dynamic shared memory: hidden shared_memory::experts_scalar(kBM, kBN, kBK, 3) (A slice + 3 B
// slices), input and weight_grad experts_scalar(kBM, kBN, kBK, 1).
#include "rudnn/grid.cuh"
#include "rudnn/moe/dispatch.cuh"  // kNoSlot
#include "rudnn/moe/experts_scalar.cuh"

namespace rudnn::moe {

namespace scalar_detail {

// Stages a K-slice of a tile from a [K, ld] row-major source whose tile columns start at `src`:
// dst[k·kStride + c] = element (k0 + k, c) for c < count and k0 + k < K, else 0, where row k of the
// source is rows[k] when a row list is given (an expert's rows in token order) and k otherwise.
// Consecutive threads read consecutive columns.
template <class P, int kCols, int kStride, class T>
RUDNN_DEVICE void stage_kmajor(float* dst, const T* src, const u32* rows, i64 ld, i64 count, i64 K, i64 k0, int tid) {
  constexpr int kPerThread = kCols * P::kBK / P::kThreads;
  RUDNN_UNROLL
  for (int q = 0; q < kPerThread; ++q) {
    const int idx = tid + q * P::kThreads;
    const int k = idx / kCols;
    const int c = idx % kCols;
    float v = 0.0f;
    if (c < count && k0 + k < K) v = to_float(src[(rows ? static_cast<i64>(rows[k0 + k]) : k0 + k) * ld + c]);
    dst[k * kStride + c] = v;
  }
}

template <class P, int kMats>
RUDNN_DEVICE void zero(float (&acc)[kMats][P::kTM][P::kTN]) {
  RUDNN_UNROLL
  for (int m = 0; m < kMats; ++m) RUDNN_UNROLL
  for (int i = 0; i < P::kTM; ++i) RUDNN_UNROLL
  for (int j = 0; j < P::kTN; ++j) acc[m][i][j] = 0.0f;
}

// acc += A·B over K, A row-major (a_rows rows of length K at `a`), B k-major (`b_cols` columns of a
// [K, ld] matrix starting at `b`). Contains barriers.
template <class P, class TA, class TB>
RUDNN_DEVICE void tile_gemm_nn(float (&acc)[1][P::kTM][P::kTN], const TA* a, i64 a_rows, const TB* b, i64 ld,
                               i64 b_cols, i64 K, float* smem, int tid) {
  float* sa = smem;
  float* sb = smem + P::kBK * P::kStrideA;
  for (i64 k0 = 0; k0 < K; k0 += P::kBK) {
    __syncthreads();
    stage_slice<P, P::kBM, P::kStrideA>(sa, a, a_rows, K, k0, tid);
    stage_kmajor<P, P::kBN, P::kStrideB>(sb, b, nullptr, ld, b_cols, K, k0, tid);
    __syncthreads();
    multiply_slice<P, 1>(acc, sa, sb, tid / P::kThreadsN, tid % P::kThreadsN);
  }
}

RUDNN_DEVICE float sigmoid(float z) { return 1.0f / (1.0f + expf(-z)); }

// Walks the output tiles of a grouped "rows × cols" product as the forward's for_each_tile does
// (row tiles of one expert over grid.y, column tiles over grid.x): body(expert, row0, count, n0,
// ncols) per tile, called by every thread of the block together (bodies contain barriers).
template <class P, class Body>
RUDNN_DEVICE void for_each_row_tile(const u32* offsets, i64 experts, i64 n_rows, i64 cols, Body body) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const i64 n_tiles = (cols + P::kBN - 1) / P::kBN;
  TileCursor cursor;
  for (i64 m = blockIdx.y;; m += gridDim.y) {
    i64 expert = 0, row0 = 0, count = 0;
    if (!cursor.find<P::kBM>(offsets, experts, n_rows, m, lane, expert, row0, count)) break;
    if (count <= 0) continue;  // only when offsets run past n_rows (uniform: skips no barrier)
    for (i64 nt = blockIdx.x; nt < n_tiles; nt += gridDim.x) {
      const i64 n0 = nt * P::kBN;
      body(expert, row0, count, n0, cols - n0 < P::kBN ? cols - n0 : P::kBN);
    }
  }
}

// Calls store(r, c, i, j) for each of this thread's accumulator elements inside count × ncols.
template <class P, class Store>
RUDNN_DEVICE void for_each_output(i64 count, i64 ncols, Store store) {
  const int tid = static_cast<int>(threadIdx.x);
  const int ty = tid / P::kThreadsN, tx = tid % P::kThreadsN;
  RUDNN_UNROLL
  for (int i = 0; i < P::kTM; ++i) {
    const int r = ty * P::kTM + i;
    RUDNN_UNROLL
    for (int j = 0; j < P::kTN; ++j) {
      const int c = tx * P::kTN + j;
      if (r < count && c < ncols) store(r, c, i, j);
    }
  }
}

}  // namespace scalar_detail

template <class T, class Policy>
RUDNN_DEVICE void swiglu_backward_hidden_scalar(const T* rows, const T* dy, const u32* offsets, const T* gate,
                                                const T* up, const T* down, float* da, float* db, float* hh, i64 n_rows,
                                                i64 experts, i64 hidden, i64 inter) {
  using P = Policy;
  using namespace scalar_detail;
  float* smem = dynamic_shared<float>();
  const int tid = static_cast<int>(threadIdx.x);
  for_each_row_tile<P>(offsets, experts, n_rows, inter, [&](i64 expert, i64 row0, i64 count, i64 n0, i64 ncols) {
    // A and B recomputed: X·gateᵀ, X·upᵀ (K = hidden).
    const T* const b[2] = {gate + (expert * inter + n0) * hidden, up + (expert * inter + n0) * hidden};
    float ab[2][P::kTM][P::kTN];
    tile_gemm<P, 2>(ab, rows + row0 * hidden, count, b, ncols, hidden, smem, tid);
    // dHh = dY·down_e, down_e [H, I]: columns n0.. of a [H, I] matrix (K = hidden).
    float dh[1][P::kTM][P::kTN];
    zero<P, 1>(dh);
    tile_gemm_nn<P>(dh, dy + row0 * hidden, count, down + expert * hidden * inter + n0, inter, ncols, hidden, smem,
                    tid);
    for_each_output<P>(count, ncols, [&](int r, int c, int i, int j) {
      const float a = ab[0][i][j], bv = ab[1][i][j], g = dh[0][i][j];
      const float s = sigmoid(a), act = a * s;
      const i64 at = (row0 + r) * inter + n0 + c;
      da[at] = g * bv * (s * (1.0f + a * (1.0f - s)));
      db[at] = g * act;
      hh[at] = act * bv;
    });
  });
}

template <class T, class Policy>
RUDNN_DEVICE void swiglu_backward_input_scalar(const float* da, const float* db, const u32* offsets, const T* gate,
                                               const T* up, T* dx, i64 n_rows, i64 experts, i64 hidden, i64 inter) {
  using P = Policy;
  using namespace scalar_detail;
  float* smem = dynamic_shared<float>();
  const int tid = static_cast<int>(threadIdx.x);
  for_each_row_tile<P>(offsets, experts, n_rows, hidden, [&](i64 expert, i64 row0, i64 count, i64 n0, i64 ncols) {
    // dX = dA·gate_e + dB·up_e, gate_e and up_e [I, H]: columns n0.. (K = inter).
    float acc[1][P::kTM][P::kTN];
    zero<P, 1>(acc);
    tile_gemm_nn<P>(acc, da + row0 * inter, count, gate + expert * inter * hidden + n0, hidden, ncols, inter, smem,
                    tid);
    tile_gemm_nn<P>(acc, db + row0 * inter, count, up + expert * inter * hidden + n0, hidden, ncols, inter, smem, tid);
    for_each_output<P>(count, ncols, [&](int r, int c, int i, int j) {
      dx[(row0 + r) * hidden + n0 + c] = from_float<T>(acc[0][i][j]);
    });
  });
}

// order[offsets[e] + i] = the row (slots[a]) of expert e's i-th assignment a in ascending a (token
// order): a block per expert scans the slots in chunks of kThreads, ranking its hits by ballots and
// a prefix over the warps. Slots outside every expert (kNoSlot) are skipped.
template <int kThreads>
RUDNN_DEVICE void expert_row_order(const u32* slots, const u32* offsets, u32* order, i64 assignments, i64 experts) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "expert_row_order: whole warps, at most 1024 threads");
  constexpr int kWarps = kThreads / 32;
  u32* warp_hits = dynamic_shared<u32>();  // [kWarps]
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  for (i64 e = linear_block(); e < experts; e += block_count()) {
    const u32 begin = offsets[e], end = offsets[e + 1];
    u32 placed = 0;
    for (i64 base = 0; base < assignments; base += kThreads) {
      const i64 a = base + tid;
      const u32 slot = a < assignments ? slots[a] : kNoSlot;
      const bool hit = slot != kNoSlot && slot >= begin && slot < end;
      const u32 ballot = __ballot_sync(0xffffffffu, hit);
      if (lane == 0) warp_hits[warp] = static_cast<u32>(__popc(ballot));
      __syncthreads();
      u32 before = static_cast<u32>(__popc(ballot & ((1u << lane) - 1u))), total = 0;
      for (int w = 0; w < kWarps; ++w) {
        if (w < warp) before += warp_hits[w];
        total += warp_hits[w];
      }
      if (hit) order[begin + placed + before] = slot;
      placed += total;
      __syncthreads();  // warp_hits is rewritten by the next chunk
    }
  }
}

// out[e, m, k] = Σ_i p[r_i, m]·q[r_i, k] over expert e's rows r_i = order[offsets[e] + i] (token
// order; p [N, M], q [N, K2]), FP32.
template <class TP, class TQ, class Policy>
RUDNN_DEVICE void experts_weight_grad_scalar(const TP* p, const TQ* q, const u32* offsets, const u32* order, float* out,
                                             i64 n_rows, i64 experts, i64 M, i64 K2) {
  using P = Policy;
  using namespace scalar_detail;
  float* smem = dynamic_shared<float>();
  float* sa = smem;
  float* sb = smem + P::kBK * P::kStrideA;
  const int tid = static_cast<int>(threadIdx.x);
  const int ty = tid / P::kThreadsN, tx = tid % P::kThreadsN;
  const i64 m_tiles = (M + P::kBM - 1) / P::kBM, n_tiles = (K2 + P::kBN - 1) / P::kBN;
  for (i64 e = blockIdx.y; e < experts; e += gridDim.y) {
    const i64 begin = offsets[e];
    i64 end = offsets[e + 1];
    if (end > n_rows) end = n_rows;  // offsets beyond the rows given: never read past them
    const i64 rows = end > begin ? end - begin : 0;
    for (i64 t = blockIdx.x; t < m_tiles * n_tiles; t += gridDim.x) {
      const i64 m0 = (t / n_tiles) * P::kBM, n0 = (t % n_tiles) * P::kBN;
      const i64 mcols = M - m0 < P::kBM ? M - m0 : P::kBM, ncols = K2 - n0 < P::kBN ? K2 - n0 : P::kBN;
      float acc[1][P::kTM][P::kTN];
      zero<P, 1>(acc);
      for (i64 k0 = 0; k0 < rows; k0 += P::kBK) {
        __syncthreads();
        stage_kmajor<P, P::kBM, P::kStrideA>(sa, p + m0, order + begin, M, mcols, rows, k0, tid);
        stage_kmajor<P, P::kBN, P::kStrideB>(sb, q + n0, order + begin, K2, ncols, rows, k0, tid);
        __syncthreads();
        multiply_slice<P, 1>(acc, sa, sb, ty, tx);
      }
      for_each_output<P>(mcols, ncols,
                         [&](int r, int c, int i, int j) { out[(e * M + m0 + r) * K2 + n0 + c] = acc[0][i][j]; });
    }
  }
}

}  // namespace rudnn::moe
