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
//   conv_fprop_igemm_split<T, G, P>(x, w, partial, n, splits)
//   conv_dgrad_igemm_split<T, G, P>(dy, w, partial, n, splits)
//       Split-K for layers with few output tiles (a 7×7 ResNet stage, a UNet bottleneck at batch 2):
//       the same GEMM with its K blocks cut into `splits` (≥ 1) contiguous ranges of
//       ⌈K blocks / splits⌉; split s writes FP32 partial [splits][M][N] slice s in full (zeros for an
//       empty range). conv_split_reduce sums the slices in index order (and adds the bias).
//   conv_wgrad_igemm<T, G, P>(x, dy, partial, n, splits)
//       dw [O, Taps·C] = dyᵀ [O, n·OutPixels] · im2col(x) [n·OutPixels, Taps·C], the reduction cut
//       into `splits` (≥ 1) contiguous ranges s·⌈K/splits⌉ .. min(K, (s+1)·⌈K/splits⌉); split s writes
//       FP32 partial [splits][O][Taps·C] slice s in full (zeros for an empty range, e.g. n = 0: no
//       memset needed). Both operands are K-major in shared memory (ldmatrix.trans).
//   conv_split_reduce<T, B>(partial, bias, out, elements, columns, splits)
//       out[e] = Σ_{s = 0..splits−1} partial[s][e] in that order (+ bias[e mod columns] when B is not
//       void), rounded to T. Also the weight backward's reduce (B void, elements = O·Taps·C).
// Determinism: each output element is produced by exactly one block tile, summing K in one fixed
// order; the splits are summed in index order. No atomics: same bits for any grid and schedule.
//
// Launch: block = P::kThreads = 32·WarpsM·WarpsN threads (a block of another size traps); any grid
// (blocks stride over the tiles by linear_block); the natural grid is
//   fprop [splits·]⌈n·OutPixels/BM⌉·⌈O/BN⌉, dgrad [splits·]⌈n·InPixels/BM⌉·⌈C/BN⌉,
//   wgrad splits·⌈O/BM⌉·⌈Taps·C/BN⌉
// tiles (the compiler launches it as x = ⌈M/BM⌉, y = ⌈N/BN⌉, z = splits: one block per tile, where a
// single grid dimension ⌈M·⌈N/BN⌉/BM⌉ would leave a few blocks two tiles); reduce: any block size,
// natural grid ⌈elements/threads⌉. n = 0: fprop/dgrad write nothing; wgrad writes zeros (the gradient
// over an empty batch).
// Dynamic shared memory (bytes, conv/shared_memory.h, element size sizeof(T)):
//   fprop igemm_fprop(Stages, BM, BN, BK, sizeof T), dgrad igemm_dgrad(...), wgrad igemm_wgrad(...),
//   reduce 0; the same numbers as kIgemmSharedBytes{Fprop,Dgrad,Wgrad}<T, P> below.
// Gathers use 16-byte cp.async when the contiguous run of the operand is a multiple of 16 bytes
// (fprop: C and Taps·C; dgrad: O and C; wgrad: O and C — 8 elements for f16/bf16, 4 for float) and
// single-element loads otherwise, so every C and O works; all tensors must be 16-byte aligned.
// Edge tiles (M, N, K not multiples of the tile) are zero-filled in shared memory and masked at the
// store.
//
// Registered (the compiler lists these exact tuples) gemm::BlockPolicy<BM, BN, BK, WarpsM, WarpsN, Stages, TC>:
//   <128, 128, 32, 2, 4, 3, true>   large layers (ResNet-class, 8 warps of 64×32)
//   < 64, 128, 32, 2, 2, 3, true>   wide outputs, fewer pixels
//   < 64,  64, 32, 2, 2, 4, true>   small shapes (more tiles for 132 SMs)
//   < 64,  64, 16, 2, 4, 3, false>  plain FMA, every T (F32 path), 256 threads of 4×4
//   < 32,  32, 16, 2, 2, 2, false>  plain FMA, small shapes, 128 threads of 2×4
//   <128, 128, 64, 2, 4, 3, true>   long K (large C): half the K blocks of BK = 32 (autotune only)
//   <128, 128, 32, 2, 2, 4, true>   4 warps of 64×64: half the ldmatrix per mma of 2×4 (autotune only)
//   <128,  64, 32, 2, 2, 4, true>   64 columns, 4 warps of 64×32 (autotune only)
#include "rudnn/conv/dgrad_phase.cuh"
#include "rudnn/conv/geometry.cuh"
#include "rudnn/gemm/block_engine.cuh"
#include "rudnn/gemm/wgmma_engine.cuh"
#include "rudnn/conv/igemm_gather.cuh"
#include "rudnn/conv/shared_memory.h"
#include "rudnn/grid.cuh"
#include "rudnn/numeric.cuh"

namespace rudnn::conv {

template <class T, class P>
inline constexpr int kIgemmSharedBytesFprop =
    static_cast<int>(shared_memory::igemm_fprop(P::kStages, P::kBM, P::kBN, P::kBK, sizeof(T), P::kWgmma));
template <class T, class P>
inline constexpr int kIgemmSharedBytesDgrad =
    static_cast<int>(shared_memory::igemm_dgrad(P::kStages, P::kBM, P::kBN, P::kBK, sizeof(T), P::kWgmma));
template <class T, class P>
inline constexpr int kIgemmSharedBytesWgrad =
    static_cast<int>(shared_memory::igemm_wgrad(P::kStages, P::kBM, P::kBN, P::kBK, sizeof(T), P::kWgmma));

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

// K blocks [begin, end) of split s of `splits`: contiguous ranges of ⌈k_blocks / splits⌉ (the last
// ones may be short or empty). The GEMM's K is below 2^30 (the index guard), so its blocks and
// columns are counted in 32 bits inside the K loop.
struct KRange {
  int begin, end;
};
RUDNN_DEVICE KRange split_range(i64 k_blocks, i64 splits, i64 s) {
  const i64 per = (k_blocks + splits - 1) / splits;
  const i64 begin = s * per < k_blocks ? s * per : k_blocks;
  return {static_cast<int>(begin), static_cast<int>(begin + per < k_blocks ? begin + per : k_blocks)};
}

// Where a pass's tiles go: rows of an output matrix of Elem, split s's block at
// base + s·split_stride; value(col, v) is the stored element (RoundedRows: the forward's bias added,
// rounded to U; SplitRows: the FP32 split sum as it is).
template <class U, class B>
struct RoundedRows {
  using Elem = U;
  U* base;
  const B* bias;
  i64 columns;
  RUDNN_DEVICE U* row(i64, i64 r) const { return base + r * columns; }
  RUDNN_DEVICE U value(i64 col, float v) const {
    if constexpr (!IsVoid<B>::value) v += to_float(bias[col]);
    return from_float<U>(v);
  }
};
struct SplitRows {
  using Elem = float;
  float* base;
  i64 split_stride, columns;
  RUDNN_DEVICE float* row(i64 s, i64 r) const { return base + s * split_stride + r * columns; }
  RUDNN_DEVICE float value(i64, float v) const { return v; }
};

// The tile (rows m0.. of M, columns n0.. of N) through E::store_rows to out's rows dst_row(m) of
// split s.
template <class E, i64 N, class Out, class DstRow>
RUDNN_DEVICE void store_tile(const typename E::Acc& acc, typename E::Smem* smem, const Out& out, i64 s, i64 m0, i64 n0,
                             i64 M, const DstRow& dst_row) {
  using U = typename Out::Elem;
  constexpr bool kVector = N * static_cast<i64>(sizeof(U)) % 16 == 0;
  const int cols = static_cast<int>(N - n0 < E::kBN ? N - n0 : E::kBN);
  E::template store_rows<U, kVector>(
      acc, smem, cols, [&](int c, float v) { return out.value(n0 + c, v); },
      [&](int r) -> U* { return m0 + r < M ? out.row(s, dst_row(m0 + r)) + n0 : nullptr; });
}

}  // namespace igemm_detail

namespace igemm_detail {

// The forward's tiles, each split's K range of each, to out's rows (m: output pixel).
template <class T, class G, class P, class Out>
RUDNN_DEVICE void fprop_tiles(const T* x, const T* w, i64 n, i64 splits, const Out& out) {
  check_shape<T, G, P>();
  check_block<P>();
  using E = gemm::EngineFor<T, P, false, false>;
  static_assert(E::kSharedBytes == kIgemmSharedBytesFprop<T, P>, "engine and shared_memory.h disagree");
  using ALoad = igemm::GatherTile<T, P::kBM, P::kBK, P::kThreads, igemm::kChunkWidth<T, G::kC>, typename E::ALayout>;
  using BLoad =
      igemm::GatherTile<T, P::kBN, P::kBK, P::kThreads, igemm::kChunkWidth<T, G::kFilter>, typename E::BLayout>;
  constexpr i64 K = G::kFilter, N = G::kO;
  const i64 M = n * G::kOutPixels;
  const i64 m_tiles = (M + P::kBM - 1) / P::kBM, n_tiles = (N + P::kBN - 1) / P::kBN;
  const i64 tiles = splits * m_tiles * n_tiles;
  T* smem = dynamic_shared<T>();
  for (i64 t = linear_block(); t < tiles; t += block_count()) {
    // x fastest over M tiles, then N tiles, then splits: the compiler's (x, y, z) grid.
    const i64 s = t / (m_tiles * n_tiles), mn = t - s * (m_tiles * n_tiles);
    const i64 m0 = mn % m_tiles * P::kBM, n0 = mn / m_tiles * P::kBN;
    const KRange range = split_range((K + P::kBK - 1) / P::kBK, splits, s);
    // Per-tile row state (fixed-column gathers): A's rows decoded once per tile; B's rows as
    // pointers to their column (null past O), so a K block adds one offset per chunk.
    igemm::WindowRow a_rows[ALoad::kFixedColumn ? ALoad::kPerThread : 1];
    const T* b_rows[BLoad::kFixedColumn ? BLoad::kPerThread : 1];
    if constexpr (ALoad::kFixedColumn) {
      RUDNN_UNROLL
      for (int i = 0; i < ALoad::kPerThread; ++i) a_rows[i] = igemm::window_row<G>(m0 + ALoad::row(i), M);
    }
    if constexpr (BLoad::kFixedColumn) {
      RUDNN_UNROLL
      for (int i = 0; i < BLoad::kPerThread; ++i) {
        const i64 o = n0 + BLoad::row(i);
        b_rows[i] = o < N ? w + (o * K + BLoad::column()) : nullptr;
      }
    }
    typename E::Acc acc;
    E::run(
        acc, smem, range.end - range.begin,
        [&](T* tile, int kb) {
          const int k0 = (kb + range.begin) * P::kBK;
          if constexpr (ALoad::kFixedColumn) {
            // One (tap, channel) per thread and K block; per chunk a few adds and range checks.
            const igemm::WindowTap tap = igemm::window_tap<G>(k0 + ALoad::column());
            ALoad::load_rows(tile, x, [&](int i) { return igemm::window_at<G>(x, a_rows[i], tap); });
          } else {
            ALoad::load(tile, x, [&](int r, int c) -> const T* {
              const i64 m = m0 + r;
              return m < M && k0 + c < K ? igemm::input_at_tap<G>(x, m, k0 + c) : nullptr;
            });
          }
        },
        [&](T* tile, int kb) {
          const int k0 = (kb + range.begin) * P::kBK;
          if constexpr (BLoad::kFixedColumn) {
            const bool in_k = k0 + BLoad::column() < K;
            BLoad::load_rows(
                tile, w, [&](int i) -> const T* { return in_k && b_rows[i] != nullptr ? b_rows[i] + k0 : nullptr; });
          } else {
            BLoad::load(tile, w, [&](int r, int c) -> const T* {
              const i64 o = n0 + r;
              return o < N && k0 + c < K ? w + (o * K + k0 + c) : nullptr;
            });
          }
        });
    store_tile<E, N>(acc, smem, out, s, m0, n0, M, [](i64 m) { return m; });
  }
}

}  // namespace igemm_detail

template <class T, class B, class G, class P>
RUDNN_DEVICE void conv_fprop_igemm(const T* x, const T* w, const B* bias, T* y, i64 n) {
  igemm_detail::fprop_tiles<T, G, P>(x, w, n, 1, igemm_detail::RoundedRows<T, B>{y, bias, G::kO});
}

template <class T, class G, class P>
RUDNN_DEVICE void conv_fprop_igemm_split(const T* x, const T* w, float* partial, i64 n, i64 splits) {
  if (splits < 1) return;
  igemm_detail::fprop_tiles<T, G, P>(x, w, n, splits,
                                     igemm_detail::SplitRows{partial, n * G::kOutPixels * G::kO, G::kO});
}

namespace igemm_detail {

// One data-backward tile of gather policy Gt (a stride phase, or every pixel and tap masked):
// rows m0.. of its n·Gt::kPixels rows, columns n0.. of C, K blocks `range` of its Gt::kK;
// out's rows (dx rows) of split s. A tile past the phase's rows does nothing.
template <class T, class G, class P, class Gt, class Out>
RUDNN_DEVICE void dgrad_tile(const T* dy, const T* w, i64 n, i64 m0, i64 n0, i64 splits, i64 s, T* smem,
                             const Out& out) {
  using E = gemm::EngineFor<T, P, false, true>;
  using ALoad = igemm::GatherTile<T, P::kBM, P::kBK, P::kThreads, igemm::kChunkWidth<T, G::kO>, typename E::ALayout>;
  using BLoad = igemm::GatherTile<T, P::kBK, P::kBN, P::kThreads, igemm::kChunkWidth<T, G::kC>, typename E::BLayout>;
  constexpr i64 K = Gt::kK, N = G::kC;
  const i64 M = n * Gt::kPixels;
  if (m0 >= M) return;
  const KRange range = split_range((K + P::kBK - 1) / P::kBK, splits, s);
  typename Gt::Row a_rows[ALoad::kFixedColumn ? ALoad::kPerThread : 1];
  if constexpr (ALoad::kFixedColumn) {
    RUDNN_UNROLL
    for (int i = 0; i < ALoad::kPerThread; ++i) a_rows[i] = Gt::row(m0 + ALoad::row(i), M);
  }
  typename E::Acc acc;
  E::run(
      acc, smem, range.end - range.begin,
      [&](T* tile, int kb) {
        const int k0 = (kb + range.begin) * P::kBK;
        if constexpr (ALoad::kFixedColumn) {
          const typename Gt::Tap tap = Gt::tap(k0 + ALoad::column());
          ALoad::load_rows(tile, dy, [&](int i) { return Gt::at(dy, a_rows[i], tap); });
        } else {
          ALoad::load(tile, dy,
                      [&](int r, int c) -> const T* { return Gt::at(dy, Gt::row(m0 + r, M), Gt::tap(k0 + c)); });
        }
      },
      [&](T* tile, int kb) {
        const int k0 = (kb + range.begin) * P::kBK;
        // Row k = q·O + o of B is w[o][filter_tap(q)][:], C-contiguous.
        if constexpr (BLoad::kFixedColumn && G::kO % P::kBK == 0) {
          // The K block lies in one tap (and K is whole blocks): row r is w[o0 + r][tap][:].
          const i64 ch = n0 + BLoad::column();
          const auto [q, o] = udivmod<G::kO>(k0);
          const int o0 = o + BLoad::row(0);
          const i64 row0 = (static_cast<i64>(o0) * G::kTaps + Gt::filter_tap(q)) * G::kC + ch;
          constexpr i64 kStep = BLoad::kRowStep * G::kTaps * G::kC;
          BLoad::load_rows(tile, w, [&](int i) -> const T* { return ch < N ? w + (row0 + i * kStep) : nullptr; });
        } else if constexpr (BLoad::kFixedColumn) {
          const i64 ch = n0 + BLoad::column();
          BLoad::load_rows(tile, w, [&](int i) -> const T* {
            const int k = k0 + BLoad::row(i);
            if (k >= K || ch >= N) return nullptr;
            const auto [q, o] = udivmod<G::kO>(k);
            return w + ((static_cast<i64>(o) * G::kTaps + Gt::filter_tap(q)) * G::kC + ch);
          });
        } else {
          BLoad::load(tile, w, [&](int r, int c) -> const T* {
            const int k = k0 + r;
            const i64 ch = n0 + c;
            if (k >= K || ch >= N) return nullptr;
            const auto [q, o] = udivmod<G::kO>(k);
            return w + ((static_cast<i64>(o) * G::kTaps + Gt::filter_tap(q)) * G::kC + ch);
          });
        }
      });
  store_tile<E, N>(acc, smem, out, s, m0, n0, M, [](i64 m) { return Gt::dx_row(m); });
}

// The tile of phase `phase` (runtime) through each phase's compiled gather.
template <class T, class G, class P, i64 Index, class Out>
RUDNN_DEVICE void dgrad_phase_tile(i64 phase, const T* dy, const T* w, i64 n, i64 m0, i64 n0, i64 splits, i64 s,
                                   T* smem, const Out& out) {
  if constexpr (kDgradPhases<G> == 1 && G::kSD * G::kSH * G::kSW > 1) {
    dgrad_tile<T, G, P, igemm::MaskedGather<G>>(dy, w, n, m0, n0, splits, s, smem, out);
  } else if constexpr (Index + 1 < kDgradPhases<G>) {
    if (phase != Index)
      dgrad_phase_tile<T, G, P, Index + 1>(phase, dy, w, n, m0, n0, splits, s, smem, out);
    else
      dgrad_tile<T, G, P, igemm::PhaseGather<G, DgradPhase<G, Index>>>(dy, w, n, m0, n0, splits, s, smem, out);
  } else {
    dgrad_tile<T, G, P, igemm::PhaseGather<G, DgradPhase<G, Index>>>(dy, w, n, m0, n0, splits, s, smem, out);
  }
}

// The data backward's tiles: splits × phases × ⌈n·(largest phase's pixels)/BM⌉ × ⌈C/BN⌉, M tiles
// fastest (the compiler's (x, y, z = split·phases + phase) grid), to out's rows (dx rows).
template <class T, class G, class P, class Out>
RUDNN_DEVICE void dgrad_tiles(const T* dy, const T* w, i64 n, i64 splits, const Out& out) {
  check_shape<T, G, P>();
  check_block<P>();
  static_assert(gemm::EngineFor<T, P, false, true>::kSharedBytes == kIgemmSharedBytesDgrad<T, P>,
                "engine and shared_memory.h disagree");
  constexpr i64 kPhases = kDgradPhases<G>;
  const i64 m_tiles = (n * kDgradPhasePixels<G> + P::kBM - 1) / P::kBM, n_tiles = (G::kC + P::kBN - 1) / P::kBN;
  const i64 tiles = splits * kPhases * m_tiles * n_tiles;
  T* smem = dynamic_shared<T>();
  for (i64 t = linear_block(); t < tiles; t += block_count()) {
    const i64 mt = t % m_tiles, rest = t / m_tiles;
    const i64 nt = rest % n_tiles, z = rest / n_tiles;
    dgrad_phase_tile<T, G, P, 0>(z % kPhases, dy, w, n, mt * P::kBM, nt * P::kBN, splits, z / kPhases, smem, out);
  }
}

}  // namespace igemm_detail

template <class T, class G, class P>
RUDNN_DEVICE void conv_dgrad_igemm(const T* dy, const T* w, T* dx, i64 n) {
  igemm_detail::dgrad_tiles<T, G, P>(dy, w, n, 1, igemm_detail::RoundedRows<T, void>{dx, nullptr, G::kC});
}

template <class T, class G, class P>
RUDNN_DEVICE void conv_dgrad_igemm_split(const T* dy, const T* w, float* partial, i64 n, i64 splits) {
  if (splits < 1) return;
  igemm_detail::dgrad_tiles<T, G, P>(dy, w, n, splits,
                                     igemm_detail::SplitRows{partial, n * G::kInPixels * G::kC, G::kC});
}

template <class T, class G, class P>
RUDNN_DEVICE void conv_wgrad_igemm(const T* x, const T* dy, float* partial, i64 n, i64 splits) {
  igemm_detail::check_shape<T, G, P>();
  igemm_detail::check_block<P>();
  using E = gemm::EngineFor<T, P, true, true>;
  static_assert(E::kSharedBytes == kIgemmSharedBytesWgrad<T, P>, "engine and shared_memory.h disagree");
  using ALoad = igemm::GatherTile<T, P::kBK, P::kBM, P::kThreads, igemm::kChunkWidth<T, G::kO>, typename E::ALayout>;
  using BLoad = igemm::GatherTile<T, P::kBK, P::kBN, P::kThreads, igemm::kChunkWidth<T, G::kC>, typename E::BLayout>;
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
    // A: row r of K block kb is dy's pixel k_begin + kb·BK + r, at channel column o (fixed per thread).
    // B: the thread's column j (fixed) has one (tap, channel) for the whole tile; its rows' pixels
    // advance by BK per K block (the pipeline loads K blocks in order 0, 1, 2, …, gemm/pipeline.cuh):
    // their windows walk (igemm::WindowWalk, no division in the K loop), or, where a K block spans
    // whole images (OutPixels ≤ BK), the rows are kept as (image, pixel in image) and decoded per block.
    const i64 span = k_end - k_begin;
    const igemm::WindowTap b_tap =
        igemm::window_tap<G>(BLoad::kFixedColumn ? static_cast<int>(n0) + BLoad::column() : 0);
    constexpr bool kWalk = G::kOutPixels > P::kBK;
    constexpr int kBRows = BLoad::kFixedColumn ? BLoad::kPerThread : 1;
    igemm::WindowWalk<G, P::kBK> b_walk[kBRows];
    i64 b_image[kBRows];
    int b_pixel[kBRows];
    if constexpr (BLoad::kFixedColumn) {
      RUDNN_UNROLL
      for (int i = 0; i < BLoad::kPerThread; ++i) {
        const i64 p = k_begin + BLoad::row(i);
        b_image[i] = p / G::kOutPixels;
        b_pixel[i] = static_cast<int>(p - b_image[i] * G::kOutPixels);
        if constexpr (kWalk) b_walk[i].r = igemm::window_row_at<G>(b_image[i], b_pixel[i]);
      }
    }
    // A's rows as a pointer to the thread's column o in its first row (null past O).
    const i64 a_column = m0 + (ALoad::kFixedColumn ? ALoad::column() : 0);
    const T* a_row0 = a_column < M ? dy + ((k_begin + ALoad::row(0)) * M + a_column) : nullptr;
    typename E::Acc acc;
    E::run(
        acc, smem, (k_end - k_begin + P::kBK - 1) / P::kBK,
        [&](T* tile, int kb) {
          // A is stored K-major: row r = output pixel k_begin + kb·BK + r, column c = channel o.
          if constexpr (ALoad::kFixedColumn) {
            const i64 r0 = static_cast<i64>(kb) * P::kBK;
            const i64 left = span - r0 - ALoad::row(0);  // rows of this thread still in the split
            ALoad::load_rows(tile, dy, [&](int i) -> const T* {
              return i * ALoad::kRowStep < left && a_row0 != nullptr ? a_row0 + (r0 + i * ALoad::kRowStep) * M
                                                                     : nullptr;
            });
          } else {
            ALoad::load(tile, dy, [&](int r, int c) -> const T* {
              const i64 p = k_begin + static_cast<i64>(kb) * P::kBK + r, o = m0 + c;
              return p < k_end && o < M ? dy + p * M + o : nullptr;
            });
          }
        },
        [&](T* tile, int kb) {
          if constexpr (BLoad::kFixedColumn) {
            const i64 r0 = static_cast<i64>(kb) * P::kBK + BLoad::row(0);
            BLoad::load_rows(tile, x, [&](int i) -> const T* {
              const bool in_split = r0 + i * BLoad::kRowStep < span;
              const T* src = nullptr;
              // Read, then advance to the same row of the next K block.
              if constexpr (kWalk) {
                if (in_split) src = igemm::window_at<G>(x, b_walk[i].r, b_tap);
                b_walk[i].advance();
              } else {
                if (in_split) src = igemm::window_at<G>(x, igemm::window_row_at<G>(b_image[i], b_pixel[i]), b_tap);
                b_pixel[i] += P::kBK;
                const int images = b_pixel[i] / static_cast<int>(G::kOutPixels);
                b_image[i] += images;
                b_pixel[i] -= images * static_cast<int>(G::kOutPixels);
              }
              return src;
            });
          } else {
            BLoad::load(tile, x, [&](int r, int c) -> const T* {
              const i64 p = k_begin + static_cast<i64>(kb) * P::kBK + r, j = n0 + c;
              return p < k_end && j < N ? igemm::input_at_tap<G>(x, p, static_cast<int>(j)) : nullptr;
            });
          }
        });
    igemm_detail::store_tile<E, N>(acc, smem, igemm_detail::SplitRows{partial, M * N, N}, s, m0, n0, M,
                                   [](i64 o) { return o; });
  }
}

template <class T, class B>
RUDNN_DEVICE void conv_split_reduce(const float* partial, const B* bias, T* out, i64 elements, i64 columns,
                                    i64 splits) {
  const i64 threads = static_cast<i64>(blockDim.x);
  for (i64 e = linear_block() * threads + threadIdx.x; e < elements; e += block_count() * threads) {
    float sum = 0.0f;
    for (i64 s = 0; s < splits; ++s) sum += partial[s * elements + e];
    if constexpr (!IsVoid<B>::value) sum += to_float(bias[e % columns]);
    out[e] = from_float<T>(sum);
  }
}

}  // namespace rudnn::conv
