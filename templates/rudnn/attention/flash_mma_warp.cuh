#pragma once
// The two warp-level tensor-core products of the flash attention main loop (mma.sync m16n8k16,
// FP32 accumulation), for one warp owning kMI·16 query rows of the block:
//   warp_scores      S[16·kMI, kBN] = Q_warp · K_tileᵀ     Q and K from shared memory by ldmatrix
//   warp_accumulate  O[16·kMI, kD] += P · V_tile           P straight from S's registers, V by
//                                                          ldmatrix.trans
// Register layout (PTX C fragment, see gemm/mma_tile.cuh): s[mi][j][v] is row 16·mi + lane/4 +
// 8·(v/2), column 8·j + 2·(lane%4) + v%2 of the warp's tile; o[mi][d][v] likewise with column 8·d.
//
// The trick that keeps P in registers: the C fragment of two adjacent n8 tiles (columns 16·kk ..
// 16·kk + 15) holds exactly the elements of the A fragment of the k16 step kk — a0a1 = (g, 2t..),
// a2a3 = (g + 8, 2t..), a4a5 = (g, 8 + 2t..), a6a7 = (g + 8, 8 + 2t..) — so P only needs a packed
// conversion to T (pack_probabilities), no shuffle and no trip through shared memory.
//
// These are the pieces a Hopper version replaces (wgmma reading Q/K/V from shared memory
// descriptors); the softmax (flash_mma_softmax.cuh) and the score modifiers (flash_mma_scores.cuh)
// only see the S/O register arrays.
#include "rudnn/gemm/mma_tile.cuh"
#include "rudnn/numeric.cuh"

namespace rudnn::attention::flash_mma {

// Where lane `lane` points its ldmatrix row address inside a tile of row stride kLd, for the three
// operand loads. Computed once: every fragment address is then this lane base plus a compile-time
// offset, which ptxas folds into the LDSM immediate (an address rebuilt per fragment from `lane`
// comes out of LLVM as an OR of disjoint bits that it cannot fold, and costs a register each).
//   a  Q as A (x4): matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15),
//      (rows 8-15, k 8-15) = a0..a3; lane l gives row l%16 at column 8·(l/16).
//   b  K as B (x4, two n8 tiles): (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15);
//      lane l gives key row 8·(l/16) + l%8 at column 8·((l/8)%2).
//   v  V as B (x4.trans, two n8 tiles): (keys 0-7, d 0-7), (keys 8-15, d 0-7), (keys 0-7, d 8-15),
//      (keys 8-15, d 8-15); lane l gives key row 8·((l/8)%2) + l%8 at column 8·(l/16).
struct LaneOffsets {
  int a, b, v;
};
template <int kLd>
RUDNN_DEVICE LaneOffsets lane_offsets(int lane) {
  const int hi = lane >> 4, mid = (lane >> 3) & 1, r8 = lane & 7;
  return {(lane & 15) * kLd + 8 * hi, (8 * hi + r8) * kLd + 8 * mid, (8 * mid + r8) * kLd + 8 * hi};
}

// S = Q·Kᵀ. q_lane: the warp's first Q row in shared memory plus LaneOffsets::a; k_lane: the K
// tile (kNI·8 key rows) plus LaneOffsets::b; both row stride kLd, kD columns.
template <class T, int kMI, int kNI, int kD, int kLd>
RUDNN_DEVICE void warp_scores(float (&s)[kMI][kNI][4], const T* q_lane, const T* k_lane) {
  static_assert(kNI % 2 == 0 && kD % 16 == 0, "warp_scores: whole n16 key pairs and k16 steps");
  RUDNN_UNROLL
  for (int mi = 0; mi < kMI; ++mi)
    RUDNN_UNROLL
    for (int j = 0; j < kNI; ++j)
      RUDNN_UNROLL
      for (int v = 0; v < 4; ++v) s[mi][j][v] = 0.0f;
  RUDNN_UNROLL
  for (int kk = 0; kk < kD; kk += 16) {
    u32 a[kMI][4];
    RUDNN_UNROLL
    for (int mi = 0; mi < kMI; ++mi) ldmatrix_x4(a[mi], q_lane + 16 * mi * kLd + kk);
    RUDNN_UNROLL
    for (int j = 0; j < kNI; j += 2) {
      u32 b[4];
      ldmatrix_x4(b, k_lane + 8 * j * kLd + kk);
      const u32 b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
      RUDNN_UNROLL
      for (int mi = 0; mi < kMI; ++mi) {
        gemm::mma_16816<T>(s[mi][j], a[mi], b0);
        gemm::mma_16816<T>(s[mi][j + 1], a[mi], b1);
      }
    }
  }
}

// The A fragment of the k16 step kk of P·V from the probabilities in the C layout (see above).
template <class T, int kMI, int kNI>
RUDNN_DEVICE void pack_probabilities(u32 (&a)[4], const float (&p)[kMI][kNI][4], int mi, int kk) {
  a[0] = pack2_from_float<T>(p[mi][2 * kk][0], p[mi][2 * kk][1]);
  a[1] = pack2_from_float<T>(p[mi][2 * kk][2], p[mi][2 * kk][3]);
  a[2] = pack2_from_float<T>(p[mi][2 * kk + 1][0], p[mi][2 * kk + 1][1]);
  a[3] = pack2_from_float<T>(p[mi][2 * kk + 1][2], p[mi][2 * kk + 1][3]);
}

// O += P·V. p: probabilities in S's layout (FP32, rounded to T here); v_lane: the V tile (kNI·8 key
// rows of kDI·8 values, row stride kLd) plus LaneOffsets::v. Transposed, lane l receives (keys
// 2(l%4), 2(l%4)+1; d = l/4) of each matrix: the .col B operand (k = 2t.., n = g) of the first n8
// tile in r0 (keys 0-7) and r1 (keys 8-15), of the second in r2, r3.
template <class T, int kMI, int kNI, int kDI, int kLd>
RUDNN_DEVICE void warp_accumulate(float (&o)[kMI][kDI][4], const float (&p)[kMI][kNI][4], const T* v_lane) {
  static_assert(kNI % 2 == 0 && kDI % 2 == 0, "warp_accumulate: whole k16 key steps and n16 value pairs");
  RUDNN_UNROLL
  for (int kk = 0; kk < kNI / 2; ++kk) {
    u32 a[kMI][4];
    RUDNN_UNROLL
    for (int mi = 0; mi < kMI; ++mi) pack_probabilities<T>(a[mi], p, mi, kk);
    RUDNN_UNROLL
    for (int d = 0; d < kDI; d += 2) {
      u32 b[4];
      ldmatrix_x4_trans(b, v_lane + 16 * kk * kLd + 8 * d);
      const u32 b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
      RUDNN_UNROLL
      for (int mi = 0; mi < kMI; ++mi) {
        gemm::mma_16816<T>(o[mi][d], a[mi], b0);
        gemm::mma_16816<T>(o[mi][d + 1], a[mi], b1);
      }
    }
  }
}

}  // namespace rudnn::attention::flash_mma
