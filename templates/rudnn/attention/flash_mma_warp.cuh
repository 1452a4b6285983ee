#pragma once
// The two warp-level tensor-core products of the flash attention main loop (mma.sync m16n8k16,
// FP32 accumulation), for one warp owning kMI·16 query rows of the block, built from the tile
// vocabulary (tile/mma_fragment.cuh, tile/accumulator.cuh):
//   warp_scores      S[16·kMI, kBN] = Q_warp · K_tileᵀ     Q and K from shared memory by ldmatrix
//   warp_accumulate  O[16·kMI, kD] += P · V_tile           P straight from S's registers, V by
//                                                          ldmatrix.trans
// S and O are tile::Accumulator<kMI, ·>: s.c[mi][j][v] is row 16·mi + lane/4 + 8·(v/2), column
// 8·j + 2·(lane%4) + v%2 of the warp's tile; O likewise with column 8·d.
//
// P stays in registers: the C fragments of two adjacent n8 tiles of S are exactly the A fragment of
// one k16 step of P·V (tile::pack_a_from_accumulator), so P needs only a packed conversion to T.
// Loads are lane-based (tile::lane_offsets, computed once by the kernel): every fragment address is
// the lane base plus a compile-time offset, folded into the LDSM immediate.
//
// These are the pieces a Hopper version replaces (wgmma reading Q/K/V from shared memory
// descriptors); the softmax (flash_mma_softmax.cuh) and the score variant (variant.cuh) only see
// the S/O accumulators.
#include "rudnn/numeric.cuh"
#include "rudnn/tile/accumulator.cuh"
#include "rudnn/tile/mma_fragment.cuh"

namespace rudnn::attention::flash_mma {

// S = Q·Kᵀ. q_lane: the warp's first Q row in shared memory plus LaneOffsets::a; k_lane: the K
// tile (kNI·8 key rows) plus LaneOffsets::b_nt; both row stride kLd, kD columns.
template <class T, int kMI, int kNI, int kD, int kLd>
RUDNN_DEVICE void warp_scores(tile::Accumulator<kMI, kNI>& s, const T* q_lane, const T* k_lane) {
  static_assert(kNI % 2 == 0 && kD % 16 == 0, "warp_scores: whole n16 key pairs and k16 steps");
  s.zero();
  RUDNN_UNROLL
  for (int kk = 0; kk < kD; kk += 16) {
    u32 a[kMI][4];
    RUDNN_UNROLL
    for (int mi = 0; mi < kMI; ++mi) tile::load_a(a[mi], q_lane + 16 * mi * kLd + kk);
    RUDNN_UNROLL
    for (int j = 0; j < kNI; j += 2) {
      u32 b[2][2];
      tile::load_b_pair_nt(b, k_lane + 8 * j * kLd + kk);
      RUDNN_UNROLL
      for (int mi = 0; mi < kMI; ++mi) s.template mma_pair<T>(mi, j, a[mi], b);
    }
  }
}

// O += P·V. p: probabilities in S's layout (FP32, rounded to T here); v_lane: the V tile (kNI·8 key
// rows of kDI·8 values, row stride kLd) plus LaneOffsets::b_kn.
template <class T, int kMI, int kNI, int kDI, int kLd>
RUDNN_DEVICE void warp_accumulate(tile::Accumulator<kMI, kDI>& o, const tile::Accumulator<kMI, kNI>& p,
                                  const T* v_lane) {
  static_assert(kNI % 2 == 0 && kDI % 2 == 0, "warp_accumulate: whole k16 key steps and n16 value pairs");
  RUDNN_UNROLL
  for (int kk = 0; kk < kNI / 2; ++kk) {
    u32 a[kMI][4];
    RUDNN_UNROLL
    for (int mi = 0; mi < kMI; ++mi) tile::pack_a_from_accumulator<T>(a[mi], p.c, mi, kk);
    RUDNN_UNROLL
    for (int d = 0; d < kDI; d += 2) {
      u32 b[2][2];
      tile::load_b_pair_kn(b, v_lane + 16 * kk * kLd + 8 * d);
      RUDNN_UNROLL
      for (int mi = 0; mi < kMI; ++mi) o.template mma_pair<T>(mi, d, a[mi], b);
    }
  }
}

}  // namespace rudnn::attention::flash_mma
