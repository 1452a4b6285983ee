#pragma once
// Implicit-GEMM convolution (SPEC §6, issue 12): each pass is one GEMM whose operand rows are gathered
// from the activations on the fly in the mainloop (conv/igemm_gather.cuh); no im2col matrix exists in
// global memory. Channels-last, shape from G = conv::Geometry (groups == 1 only: grouped convolutions
// run the Direct kernels). FP32 accumulation, results rounded to T once. T ∈ {float, f16, bf16}.
//
//   conv_fprop_igemm<T, B, G, P>(x, w, bias, y, n)
//       y [n·OutPixels, O] = im2col(x) [n·OutPixels, Taps·C] · wᵀ (w = [O, Taps·C], "NT") + bias.
//       B ∈ {void, float, T}; bias null when B is void.
//   conv_dgrad_igemm<T, G, P>(dy, w, dx, n)
//       dx [n·InPixels, C] = gather(dy) [n·InPixels, Taps·O] · w' [Taps·O, C], w'[tap·O + o][c] =
//       w[o][tap][c] (c-contiguous rows: a "KN" B). A[m][tap·O + o] = dy at the output position that
//       input pixel m reaches through tap, zero where (i + pad − t·dil) is negative, not divisible by
//       the stride or past the output: stride > 1 is masked per element, not split by phase (the
//       masked taps cost MMA work on zeros, ≈ 1 − 1/stride^dims of it; correct for every stride).
//   conv_wgrad_igemm<T, G, P>(x, dy, partial, n, splits)
//       dw [O, Taps·C] = dyᵀ [O, n·OutPixels] · im2col(x) [n·OutPixels, Taps·C], the reduction cut
//       into `splits` (≥ 1) contiguous ranges s·⌈K/splits⌉ .. min(K, (s+1)·⌈K/splits⌉); split s writes
//       FP32 partial [splits][O][Taps·C] slice s in full (zeros for an empty range, e.g. n = 0: no
//       memset needed). Both operands are K-major in shared memory (ldmatrix.trans).
//   conv_wgrad_reduce<T>(partial, dw, elements, splits)
//       dw[e] = Σ_{s = 0..splits−1} partial[s][e] in that order, rounded to T (elements = O·Taps·C).
// Determinism: each output element is produced by exactly one block tile, summing K in one fixed
// order; the splits are summed in index order. No atomics: same bits for any grid and schedule.
//
// Launch: block = P::kThreads = 32·WarpsM·WarpsN threads (a block of another size traps); any grid
// (blocks stride over the tiles by linear_block); the natural grid is
//   fprop ⌈n·OutPixels/BM⌉·⌈O/BN⌉, dgrad ⌈n·InPixels/BM⌉·⌈C/BN⌉, wgrad splits·⌈O/BM⌉·⌈Taps·C/BN⌉
// tiles; reduce: any block size, natural grid ⌈elements/threads⌉. n = 0: fprop/dgrad write nothing;
// wgrad writes zeros (the gradient over an empty batch).
// Dynamic shared memory (bytes, conv/shared_memory.h, element size sizeof(T)):
//   fprop igemm_fprop(Stages, BM, BN, BK, sizeof T), dgrad igemm_dgrad(...), wgrad igemm_wgrad(...),
//   reduce 0; the same numbers as kIgemmSharedBytes{Fprop,Dgrad,Wgrad}<T, P> below.
// Gathers use 16-byte cp.async when the contiguous run of the operand is a multiple of 16 bytes
// (fprop: C and Taps·C; dgrad: O and C; wgrad: O and C — 8 elements for f16/bf16, 4 for float) and
// single-element loads otherwise, so every C and O works; all tensors must be 16-byte aligned.
// Edge tiles (M, N, K not multiples of the tile) are zero-filled in shared memory and masked at the
// store.
//
// Registered (the compiler lists these exact tuples) IgemmPolicy<BM, BN, BK, WarpsM, WarpsN, Stages, TC>:
//   <128, 128, 32, 2, 4, 3, true>   large layers (ResNet-class, 8 warps of 64×32)
//   < 64, 128, 32, 2, 2, 3, true>   wide outputs, fewer pixels
//   < 64,  64, 32, 2, 2, 4, true>   small shapes (more tiles for 132 SMs)
//   < 64,  64, 16, 2, 4, 3, false>  plain FMA, every T (F32 path), 256 threads of 4×4
//   < 32,  32, 16, 2, 2, 2, false>  plain FMA, small shapes, 128 threads of 2×4
#include "rudnn/conv/geometry.cuh"
#include "rudnn/conv/igemm_engine.cuh"
#include "rudnn/conv/igemm_gather.cuh"
#include "rudnn/conv/shared_memory.h"
#include "rudnn/grid.cuh"
#include "rudnn/numeric.cuh"

namespace rudnn::conv {

template <class T, class P>
inline constexpr int kIgemmSharedBytesFprop = static_cast<int>(shared_memory::igemm_fprop(P::kStages, P::kBM, P::kBN,
                                                                                          P::kBK, sizeof(T)));
template <class T, class P>
inline constexpr int kIgemmSharedBytesDgrad = static_cast<int>(shared_memory::igemm_dgrad(P::kStages, P::kBM, P::kBN,
                                                                                          P::kBK, sizeof(T)));
template <class T, class P>
inline constexpr int kIgemmSharedBytesWgrad = static_cast<int>(shared_memory::igemm_wgrad(P::kStages, P::kBM, P::kBN,
                                                                                          P::kBK, sizeof(T)));

namespace igemm_detail {

template <class P>
RUDNN_DEVICE void check_block() {
  if (blockDim.x != static_cast<unsigned>(P::kThreads) || blockDim.y != 1u || blockDim.z != 1u)
    trap("rudnn::conv implicit_gemm: blockDim must be (P::kThreads, 1, 1)");
}

template <class T, class G, class P>
RUDNN_DEVICE void check_shape() {
  static_assert(G::kGroups == 1, "implicit GEMM serves groups == 1 (grouped convolutions run Direct)");
  static_assert(!P::kTensorCore || sizeof(T) == 2, "tensor-core policies take f16/bf16");
}

}  // namespace igemm_detail

template <class T, class B, class G, class P>
RUDNN_DEVICE void conv_fprop_igemm(const T* x, const T* w, const B* bias, T* y, i64 n) {
  igemm_detail::check_shape<T, G, P>();
  igemm_detail::check_block<P>();
  using E = igemm::Engine<T, P, false, false>;
  static_assert(E::kSharedBytes == kIgemmSharedBytesFprop<T, P>, "engine and shared_memory.h disagree");
  using ALoad = igemm::GatherTile<T, P::kBM, P::kBK, P::kThreads, igemm::kChunkWidth<T, G::kC>>;
  using BLoad = igemm::GatherTile<T, P::kBN, P::kBK, P::kThreads, igemm::kChunkWidth<T, G::kFilter>>;
  constexpr i64 K = G::kFilter, N = G::kO;
  const i64 M = n * G::kOutPixels;
  const i64 n_tiles = (N + P::kBN - 1) / P::kBN;
  const i64 tiles = (M + P::kBM - 1) / P::kBM * n_tiles;
  T* smem = dynamic_shared<T>();
  for (i64 t = linear_block(); t < tiles; t += block_count()) {
    const i64 m0 = t / n_tiles * P::kBM, n0 = t % n_tiles * P::kBN;
    typename E::Acc acc;
    E::run(
        acc, smem, (K + P::kBK - 1) / P::kBK,
        [&](T* tile, i64 kb) {
          ALoad::load(tile, x, [&](int r, int c) -> const T* {
            const i64 m = m0 + r, k = kb * P::kBK + c;
            return m < M && k < K ? igemm::input_at_tap<G>(x, m, static_cast<int>(k)) : nullptr;
          });
        },
        [&](T* tile, i64 kb) {
          BLoad::load(tile, w, [&](int r, int c) -> const T* {
            const i64 o = n0 + r, k = kb * P::kBK + c;
            return o < N && k < K ? w + o * K + k : nullptr;
          });
        });
    E::each(acc, [&](int r, int c, float v) {
      const i64 m = m0 + r, o = n0 + c;
      if (m >= M || o >= N) return;
      if constexpr (!IsVoid<B>::value) v += to_float(bias[o]);
      y[m * N + o] = from_float<T>(v);
    });
  }
}

template <class T, class G, class P>
RUDNN_DEVICE void conv_dgrad_igemm(const T* dy, const T* w, T* dx, i64 n) {
  igemm_detail::check_shape<T, G, P>();
  igemm_detail::check_block<P>();
  using E = igemm::Engine<T, P, false, true>;
  static_assert(E::kSharedBytes == kIgemmSharedBytesDgrad<T, P>, "engine and shared_memory.h disagree");
  using ALoad = igemm::GatherTile<T, P::kBM, P::kBK, P::kThreads, igemm::kChunkWidth<T, G::kO>>;
  using BLoad = igemm::GatherTile<T, P::kBK, P::kBN, P::kThreads, igemm::kChunkWidth<T, G::kC>>;
  constexpr i64 K = G::kTaps * G::kO, N = G::kC;
  const i64 M = n * G::kInPixels;
  const i64 n_tiles = (N + P::kBN - 1) / P::kBN;
  const i64 tiles = (M + P::kBM - 1) / P::kBM * n_tiles;
  T* smem = dynamic_shared<T>();
  for (i64 t = linear_block(); t < tiles; t += block_count()) {
    const i64 m0 = t / n_tiles * P::kBM, n0 = t % n_tiles * P::kBN;
    typename E::Acc acc;
    E::run(
        acc, smem, (K + P::kBK - 1) / P::kBK,
        [&](T* tile, i64 kb) {
          ALoad::load(tile, dy, [&](int r, int c) -> const T* {
            const i64 m = m0 + r, k = kb * P::kBK + c;
            return m < M && k < K ? igemm::grad_output_at_tap<G>(dy, m, static_cast<int>(k)) : nullptr;
          });
        },
        [&](T* tile, i64 kb) {
          // Row k = tap·O + o of B is w[o][tap][:], C-contiguous.
          BLoad::load(tile, w, [&](int r, int c) -> const T* {
            const i64 k = kb * P::kBK + r, ch = n0 + c;
            if (k >= K || ch >= N) return nullptr;
            const i64 tap = k / G::kO, o = k - tap * G::kO;
            return w + (o * G::kTaps + tap) * G::kC + ch;
          });
        });
    E::each(acc, [&](int r, int c, float v) {
      const i64 m = m0 + r, ch = n0 + c;
      if (m < M && ch < N) dx[m * N + ch] = from_float<T>(v);
    });
  }
}

template <class T, class G, class P>
RUDNN_DEVICE void conv_wgrad_igemm(const T* x, const T* dy, float* partial, i64 n, i64 splits) {
  igemm_detail::check_shape<T, G, P>();
  igemm_detail::check_block<P>();
  using E = igemm::Engine<T, P, true, true>;
  static_assert(E::kSharedBytes == kIgemmSharedBytesWgrad<T, P>, "engine and shared_memory.h disagree");
  using ALoad = igemm::GatherTile<T, P::kBK, P::kBM, P::kThreads, igemm::kChunkWidth<T, G::kO>>;
  using BLoad = igemm::GatherTile<T, P::kBK, P::kBN, P::kThreads, igemm::kChunkWidth<T, G::kC>>;
  constexpr i64 M = G::kO, N = G::kFilter;
  if (splits < 1) return;
  const i64 K = n * G::kOutPixels;
  const i64 range = (K + splits - 1) / splits;
  constexpr i64 m_tiles = (M + P::kBM - 1) / P::kBM, n_tiles = (N + P::kBN - 1) / P::kBN;
  const i64 tiles = splits * m_tiles * n_tiles;
  T* smem = dynamic_shared<T>();
  for (i64 t = linear_block(); t < tiles; t += block_count()) {
    const i64 s = t / (m_tiles * n_tiles), mn = t - s * (m_tiles * n_tiles);
    const i64 m0 = mn / n_tiles * P::kBM, n0 = mn % n_tiles * P::kBN;
    const i64 k_begin = s * range < K ? s * range : K;
    const i64 k_end = k_begin + range < K ? k_begin + range : K;
    typename E::Acc acc;
    E::run(
        acc, smem, (k_end - k_begin + P::kBK - 1) / P::kBK,
        [&](T* tile, i64 kb) {
          // A is stored K-major: row r = output pixel k_begin + kb·BK + r, column c = channel o.
          ALoad::load(tile, dy, [&](int r, int c) -> const T* {
            const i64 p = k_begin + kb * P::kBK + r, o = m0 + c;
            return p < k_end && o < M ? dy + p * M + o : nullptr;
          });
        },
        [&](T* tile, i64 kb) {
          BLoad::load(tile, x, [&](int r, int c) -> const T* {
            const i64 p = k_begin + kb * P::kBK + r, j = n0 + c;
            return p < k_end && j < N ? igemm::input_at_tap<G>(x, p, static_cast<int>(j)) : nullptr;
          });
        });
    float* out = partial + s * M * N;
    E::each(acc, [&](int r, int c, float v) {
      const i64 o = m0 + r, j = n0 + c;
      if (o < M && j < N) out[o * N + j] = v;
    });
  }
}

template <class T>
RUDNN_DEVICE void conv_wgrad_reduce(const float* partial, T* dw, i64 elements, i64 splits) {
  const i64 threads = static_cast<i64>(blockDim.x);
  for (i64 e = linear_block() * threads + threadIdx.x; e < elements; e += block_count() * threads) {
    float sum = 0.0f;
    for (i64 s = 0; s < splits; ++s) sum += partial[s * elements + e];
    dw[e] = from_float<T>(sum);
  }
}

}  // namespace rudnn::conv
