#pragma once
// Tensor-core pieces of the chunked gated delta rule (chunked.cuh, ChunkPolicy<…, true>): warp-level
// 16×16 output blocks (tile::Block16) of mma.sync m16n8k16 (f16/bf16 operands, FP32 accumulation;
// fragments from tile/mma_fragment.cuh) over operands in shared memory with runtime row strides,
// and the FP32 state's exact-enough 16-bit split.
//
// Operand layouts (all 16-bit, every row start 16-byte aligned, as ldmatrix needs):
//   keys / queries  [Cp][ld_k] K-contiguous rows, columns [K, Kr) zero (Kr = 16⌈K/16⌉), so a
//                   product over the key dim runs Kr/16 whole k16 steps. ld_k = Kr + 8: a row
//                   stride of 4 (mod 8) words puts the 8 rows of one ldmatrix 8×8 matrix on 8
//                   disjoint 4-bank groups (conflict-free without a swizzle).
//   state split     kStateTerms planes of [Kr][ld_s], ld_s = BV + 8 (same argument), V-contiguous
//                   rows (the FP32 state's own layout); rows [K, Kr) zero. Read as the B operand
//                   (k = state row, n = column) with ldmatrix.trans.
//
// Why a split of the state rather than rounding it: K·S₀ feeds R = β(V − e^γ K S₀), hence U and
// the next state. Rounding S₀ to bf16 (8 significant bits) would put ~2⁻⁹ relative error into
// every chunk's state update, far above FP32 (the final state is an FP32 output that chains
// segments and is tested at 1e-5 relative). So S₀/σ is written as hi + mid + lo, each rounded
// to T, and K·S₀ = σ·(K·hi + K·mid + K·lo) accumulates the three MMAs in FP32:
//   bf16: 3 × 8 significant bits = 24 = FP32's, and bf16 has FP32's exponent range: the split is
//         exact (each residual is exactly representable), only the accumulation order differs.
//   f16:  3 × 11 bits, but a 5-bit exponent: σ = 2^e scales the slice's largest |S| into
//         [2¹⁴, 2¹⁵) (no overflow; hi is normal down to 2⁻²⁸ of the max), leaving an absolute
//         error ≤ 2⁻²⁵σ ≤ 2⁻³⁹·max|S| per element (subnormal lo): below FP32 rounding.
// Measured on the emulator's tests (final state, relative L2 vs the FP64 oracle): hi only for K·S₀
// ~1e-4 to 1e-3 (fails the 1e-5 bound), hi + mid ≤ 1.4e-6, hi + mid + lo ≤ 2e-7 = the plain path.
// Q̂·S₀ only feeds the output, which is rounded to T (2⁻⁹ / 2⁻¹² relative): it uses hi + mid
// (relative error ≤ 2⁻¹⁶ bf16, 2⁻²² f16), one MMA less.
// Keys and queries are staged as stored (exact); query_scale is applied in FP32 afterwards.
#include "rudnn/numeric.cuh"
#include "rudnn/tile/accumulator.cuh"
#include "rudnn/tile/mma_fragment.cuh"

namespace rudnn::gated_delta {

inline constexpr int kStateTerms = 3;   // hi, mid, lo planes of the state split
inline constexpr int kOutputTerms = 2;  // the planes Q̂·S₀ uses

RUDNN_DEVICE constexpr int round_up_16(int x) { return (x + 15) / 16 * 16; }

// One warp's 16×16 output block (tile/accumulator.cuh): two n8 tiles, lane l holding of tile h
// (row l/4, cols 8h + 2(l%4) + {0,1}) in c[0][h][0..1] and row l/4 + 8 in c[0][h][2..3].
using tile::Block16;

// acc += X[row0:row0+16, :depth] · Y[col0:col0+16, :depth]ᵀ, X and Y K-contiguous (stride ld),
// depth a multiple of 16.
template <class T>
RUDNN_DEVICE void warp_block_nt(Block16& acc, const T* x, const T* y, int ld, int row0, int col0, int depth, int lane) {
  RUDNN_ROLLED
  for (int k0 = 0; k0 < depth; k0 += 16) {
    u32 a[4], b[2][2];
    tile::load_a(a, x, ld, row0, k0, lane);
    tile::load_b_pair_nt(b, y, ld, col0, k0, lane);
    acc.mma_pair<T>(0, 0, a, b);
  }
}

// The (i, j) block of the lower block triangle of an nb×nb grid of blocks, j ≤ i, for
// index = i(i+1)/2 + j.
RUDNN_DEVICE void lower_block(int index, int& i, int& j) {
  i = 0;
  while ((i + 1) * (i + 2) / 2 <= index) ++i;
  j = index - i * (i + 1) / 2;
}

// One warp's blocks of K·S₀ and Q·S₀ at rows row0.., columns col0.. of the slice: the keys use all
// kStateTerms planes of the split, the queries the first kOutputTerms (see the header). Each B
// fragment is loaded once and feeds both products.
template <class T>
RUDNN_DEVICE void warp_state_blocks(Block16& ks, Block16& qs, const T* keys, const T* queries, int ld_k, const T* split,
                                    int plane, int ld_s, int row0, int col0, int depth, int lane) {
  RUDNN_ROLLED
  for (int k0 = 0; k0 < depth; k0 += 16) {
    u32 ak[4], aq[4];
    tile::load_a(ak, keys, ld_k, row0, k0, lane);
    tile::load_a(aq, queries, ld_k, row0, k0, lane);
    RUDNN_UNROLL
    for (int t = 0; t < kStateTerms; ++t) {
      u32 b[2][2];
      tile::load_b_pair_kn(b, split + t * plane, ld_s, k0, col0, lane);
      ks.mma_pair<T>(0, 0, ak, b);
      if (t < kOutputTerms) qs.mma_pair<T>(0, 0, aq, b);
    }
  }
}

// σ for a split: the power of two that puts `max_abs` (the slice's largest |S|, or |W|) into
// [2¹⁴, 2¹⁵), clamped to normal powers whose reciprocal is normal too; 1/σ in `inv`. Exact powers
// of two, so S/σ and σ·acc add no rounding. Zero (or a subnormal max) gives σ = 2⁻¹²⁶.
RUDNN_DEVICE float split_scale(float max_abs, float& inv) {
  int e = static_cast<int>((float_as_bits(max_abs) >> 23) & 0xffu) - 14;
  e = e < 1 ? 1 : e > 253 ? 253 : e;
  inv = bits_as_float(static_cast<u32>(254 - e) << 23);
  return bits_as_float(static_cast<u32>(e) << 23);
}

// The largest of the per-warp maxima `warp_max[0..warps)` (every thread reads them in the same
// order, so all get the same value).
RUDNN_DEVICE float block_max(const float* warp_max, int warps) {
  float m = 0.0f;
  for (int w = 0; w < warps; ++w) m = fmaxf(m, warp_max[w]);
  return m;
}

// Publishes a thread's max |S| (or |W|) over the entries it wrote: the warp's maximum goes to
// warp_max[warp]. All 32 lanes of every warp call it (no barrier inside).
RUDNN_DEVICE void publish_warp_max(float m, float* warp_max, int tid) {
  RUDNN_UNROLL
  for (int d = 16; d >= 1; d /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, d));
  if ((tid & 31) == 0) warp_max[tid >> 5] = m;
}

// x as kStateTerms terms in T, hi first, each the residual of those before rounded to T (the
// state's and W's split; the header has the accuracy argument).
template <class T>
RUDNN_DEVICE void split_terms(float x, T (&terms)[kStateTerms]) {
  RUDNN_UNROLL
  for (int t = 0; t < kStateTerms; ++t) {
    terms[t] = from_float<T>(x);
    x -= to_float(terms[t]);
  }
}

// The B fragments of the n8 tiles col0.., col0 + 8.. at k16 step k0 of W/σ, W = diag(row_scale)·X
// with X FP32 [k][ld_x] in shared memory, split in registers (split_terms; b[t] holds term t).
// Lane l reads X at rows k0 + 2(l%4) + {0, 1} (+ 8), column l/4 of each tile: the B layout of
// tile/mma_fragment.cuh, the lower row in the low half.
template <class T>
RUDNN_DEVICE void split_b_pair(u32 (&b)[kStateTerms][2][2], const float* x, int ld_x, const float* row_scale,
                               float inv_sigma, int k0, int col0, int lane) {
  const int n = col0 + (lane >> 2), k = k0 + 2 * (lane & 3);
  RUDNN_UNROLL
  for (int tile = 0; tile < 2; ++tile) {
    RUDNN_UNROLL
    for (int row_half = 0; row_half < 2; ++row_half) {
      const int r = k + 8 * row_half, c = n + 8 * tile;
      T first[kStateTerms], second[kStateTerms];  // rows r and r + 1
      split_terms(x[r * ld_x + c] * (row_scale[r] * inv_sigma), first);
      split_terms(x[(r + 1) * ld_x + c] * (row_scale[r + 1] * inv_sigma), second);
      RUDNN_UNROLL
      for (int t = 0; t < kStateTerms; ++t)
        b[t][tile][row_half] = pack2_from_float<T>(to_float(first[t]), to_float(second[t]));
    }
  }
}

// One warp's 16×16 block of the state update Kᵀ·(W/σ) at key rows row0.., slice columns col0..:
// the keys as staged ([C][ld_k], step-major: Kᵀ is read with ldmatrix.trans), W = diag(row_scale)·X
// split in registers (split_b_pair), all kStateTerms terms: W carries the state, so it keeps FP32's
// accuracy as S₀ does (exact for bf16). depth (the chunk's rows) a multiple of 16.
template <class T>
RUDNN_DEVICE void warp_state_update(Block16& acc, const T* keys, int ld_k, const float* x, int ld_x,
                                    const float* row_scale, float inv_sigma, int row0, int col0, int depth, int lane) {
  RUDNN_ROLLED
  for (int k0 = 0; k0 < depth; k0 += 16) {
    u32 a[4], b[kStateTerms][2][2];
    tile::load_a_kn(a, keys, ld_k, k0, row0, lane);
    split_b_pair<T>(b, x, ld_x, row_scale, inv_sigma, k0, col0, lane);
    RUDNN_UNROLL
    for (int t = 0; t < kStateTerms; ++t) acc.mma_pair<T>(0, 0, a, b[t]);
  }
}

// split[t][r][j] (plane stride `plane`, row stride ld_s), t < kStateTerms, for r < rows_padded and
// j < bv: the terms of S[r][j]/σ (S is `state` [rows][bv] FP32), hi first, each the residual of the
// ones before rounded to T; rows ≥ rows are zero. No barrier inside.
template <class T>
RUDNN_DEVICE void split_state(const float* state, int rows, int bv, float inv_sigma, T* split, int plane, int ld_s,
                              int rows_padded, int tid, int nthreads) {
  RUDNN_ROLLED
  for (int idx = tid; idx < rows_padded * bv; idx += nthreads) {
    const int r = idx / bv, j = idx - (idx / bv) * bv;
    T terms[kStateTerms];
    split_terms(r < rows ? state[idx] * inv_sigma : 0.0f, terms);
    RUDNN_UNROLL
    for (int t = 0; t < kStateTerms; ++t) split[t * plane + r * ld_s + j] = terms[t];
  }
}

}  // namespace rudnn::gated_delta
