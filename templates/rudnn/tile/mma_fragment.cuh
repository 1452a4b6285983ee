#pragma once
// The m16n8k16 tensor-core product and its operand fragments, for every tensor-core kernel (MoE
// experts, flash attention, the chunked gated delta rule): mma.sync.m16n8k16 with f16/bf16 operands
// and FP32 accumulation, operands loaded from shared memory by ldmatrix.x4 (see
// /work/shared/EMULATOR-FACTS.md for the lane maps; g = lane/4, t = lane%4).
//
// Fragments (per lane):
//   A  m16 × k16, row-major (".row"): u32 a[4] = halves a0..a7; a0a1 = (g, 2t..), a2a3 = (g + 8, 2t..),
//      a4a5 = (g, 8 + 2t..), a6a7 = (g + 8, 8 + 2t..).
//   B  k16 × n8 (".col"): u32 b[2] = halves b0..b3; b0b1 = (k = 2t.., n = g), b2b3 = (k = 8 + 2t.., n = g).
// One ldmatrix.x4 loads an A fragment, or the B fragments of two adjacent n8 tiles ("a pair").
//
// Two ways to address a load:
//   addressed    load_a(a, tile, ld, row0, k0, lane) etc.: the lane's row address is computed from
//                (row0, k0, lane) at each call (runtime strides, few loads per loop).
//   lane-based   the lane's offset inside a block is computed once (a_lane_offset etc.) and every
//                load is that base plus a compile-time offset (load_a(a, base + offset)), which ptxas
//                folds into the LDSM immediate: for fully unrolled main loops (flash attention),
//                where an address rebuilt per fragment from `lane` costs a register each.
// Operand layouts: "NT" B = the rows of a K-contiguous tile (a row of B's tile is one n index, so a
// plain ldmatrix gives the .col operand); "KN" B = a tile stored [k][n] (n contiguous), loaded with
// ldmatrix.trans (an 8×8 matrix of k rows transposed gives lane l (k = 2(l%4).., n = l/4)).
#include "rudnn/numeric.cuh"
#include "rudnn/prelude.cuh"

namespace rudnn::tile {

// d = a·b + d with T's MMA flavour (T ∈ {f16, bf16}).
template <class T>
RUDNN_DEVICE void mma_16816(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]);
template <>
RUDNN_DEVICE void mma_16816<f16>(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]) {
  mma_m16n8k16_f16_f32(d, a, b, d);
}
template <>
RUDNN_DEVICE void mma_16816<bf16>(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]) {
  mma_m16n8k16_bf16_f32(d, a, b, d);
}

// ---- lane offsets (elements) of the ldmatrix.x4 row address inside a block of a tile with row
// stride ld; add them once to the block's origin, then load at compile-time offsets.
//   A (x4)            matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15),
//                     (rows 8-15, k 8-15) = a0..a3; lane l gives row l%16 at column 8·(l/16).
//   B NT pair (x4)    (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15);
//                     lane l gives n row 8·(l/16) + l%8 at k column 8·((l/8)%2).
//   B KN pair (x4.t)  (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15);
//                     lane l gives k row 8·((l/8)%2) + l%8 at n column 8·(l/16).
struct LaneOffsets {
  int a, b_nt, b_kn;
};
template <int kLd>
RUDNN_DEVICE LaneOffsets lane_offsets(int lane) {
  const int hi = lane >> 4, mid = (lane >> 3) & 1, r8 = lane & 7;
  return {(lane & 15) * kLd + 8 * hi, (8 * hi + r8) * kLd + 8 * mid, (8 * mid + r8) * kLd + 8 * hi};
}

// ---- lane-based loads: `p` is the block origin plus this lane's offset from lane_offsets.
template <class T>
RUDNN_DEVICE void load_a(u32 (&a)[4], const T* p) {
  ldmatrix_x4(a, p);
}
// The B fragments of the n8 tiles n0.. (b[0]) and n0 + 8.. (b[1]).
template <class T>
RUDNN_DEVICE void load_b_pair_nt(u32 (&b)[2][2], const T* p) {
  u32 r[4];
  ldmatrix_x4(r, p);
  b[0][0] = r[0];
  b[0][1] = r[1];
  b[1][0] = r[2];
  b[1][1] = r[3];
}
template <class T>
RUDNN_DEVICE void load_b_pair_kn(u32 (&b)[2][2], const T* p) {
  u32 r[4];
  ldmatrix_x4_trans(r, p);
  b[0][0] = r[0];
  b[0][1] = r[1];
  b[1][0] = r[2];
  b[1][1] = r[3];
}

// ---- addressed loads: the m16 × k16 A block at (row0, k0), the B pair of n8 tiles n0, n0 + 8 at
// k0, of a tile with row stride ld (elements).
template <class T>
RUDNN_DEVICE void load_a(u32 (&a)[4], const T* tile, int ld, int row0, int k0, int lane) {
  ldmatrix_x4(a, tile + (row0 + (lane & 15)) * ld + k0 + ((lane >> 4) << 3));
}
template <class T>
RUDNN_DEVICE void load_b_pair_nt(u32 (&b)[2][2], const T* tile, int ld, int n0, int k0, int lane) {
  load_b_pair_nt(b, tile + (n0 + ((lane >> 4) << 3) + (lane & 7)) * ld + k0 + (((lane >> 3) & 1) << 3));
}
template <class T>
RUDNN_DEVICE void load_b_pair_kn(u32 (&b)[2][2], const T* tile, int ld, int k0, int n0, int lane) {
  load_b_pair_kn(b, tile + (k0 + (lane & 7) + (((lane >> 3) & 1) << 3)) * ld + n0 + ((lane >> 4) << 3));
}

// The m16 × k16 A block at (m0, k0) of a tile stored K-major ([k][m], m contiguous: an A operand
// whose rows are the reduction index, e.g. the weight gradient's dy), with ldmatrix.trans: lane l
// gives k row (l%8) + 8·(l/16) at m column 8·((l/8)%2), so the matrices arrive as (m 0-7, k 0-7),
// (m 8-15, k 0-7), (m 0-7, k 8-15), (m 8-15, k 8-15) = a0..a3, each transposed into the .row layout.
template <class T>
RUDNN_DEVICE void load_a_kn(u32 (&a)[4], const T* tile, int ld, int k0, int m0, int lane) {
  ldmatrix_x4_trans(a, tile + (k0 + (lane & 7) + ((lane >> 4) << 3)) * ld + m0 + (((lane >> 3) & 1) << 3));
}

// A warp's A fragments for one k16 step from a K-major tile: kMI row blocks starting at m0.
template <int kMI, int kLd, class T>
RUDNN_DEVICE void load_a_rows_kn(u32 (&a)[kMI][4], const T* tile, int m0, int k0, int lane) {
  RUDNN_UNROLL
  for (int i = 0; i < kMI; ++i) load_a_kn(a[i], tile, kLd, k0, m0 + 16 * i, lane);
}

// A warp's KN B fragments for one k16 step: kNI n8 tiles (kNI even) starting at n0 of a tile
// stored [k][n].
template <int kNI, int kLd, class T>
RUDNN_DEVICE void load_b_cols_kn(u32 (&b)[kNI][2], const T* tile, int n0, int k0, int lane) {
  static_assert(kNI % 2 == 0, "load_b_cols_kn: n8 tiles come in pairs (ldmatrix.x4.trans)");
  RUDNN_UNROLL
  for (int j = 0; j < kNI; j += 2) {
    u32 pair[2][2];
    load_b_pair_kn(pair, tile, kLd, k0, n0 + 8 * j, lane);
    b[j][0] = pair[0][0];
    b[j][1] = pair[0][1];
    b[j + 1][0] = pair[1][0];
    b[j + 1][1] = pair[1][1];
  }
}

// A warp's A fragments for one k16 step: kMI row blocks starting at row0.
template <int kMI, int kLd, class T>
RUDNN_DEVICE void load_a_rows(u32 (&a)[kMI][4], const T* tile, int row0, int k0, int lane) {
  RUDNN_UNROLL
  for (int i = 0; i < kMI; ++i) load_a(a[i], tile, kLd, row0 + 16 * i, k0, lane);
}

// A warp's NT B fragments for one k16 step: kNI n8 tiles (kNI even) starting at n0.
template <int kNI, int kLd, class T>
RUDNN_DEVICE void load_b_cols_nt(u32 (&b)[kNI][2], const T* tile, int n0, int k0, int lane) {
  static_assert(kNI % 2 == 0, "load_b_cols_nt: n8 tiles come in pairs (ldmatrix.x4)");
  RUDNN_UNROLL
  for (int j = 0; j < kNI; j += 2) {
    u32 pair[2][2];
    load_b_pair_nt(pair, tile, kLd, n0 + 8 * j, k0, lane);
    b[j][0] = pair[0][0];
    b[j][1] = pair[0][1];
    b[j + 1][0] = pair[1][0];
    b[j + 1][1] = pair[1][1];
  }
}

// The A fragment of k16 step kk of a product whose A operand is an FP32 accumulator in the C layout
// (c[i][j][v], see accumulator.cuh), rounded to T: the C fragments of the n8 tiles 2kk and 2kk + 1
// hold exactly a0..a7 (a0a1 = (g, 2t..), a2a3 = (g + 8, 2t..), a4a5 = (g, 8 + 2t..),
// a6a7 = (g + 8, 8 + 2t..)), so no shuffle and no trip through shared memory (flash attention's P).
template <class T, int kMI, int kNI>
RUDNN_DEVICE void pack_a_from_accumulator(u32 (&a)[4], const float (&c)[kMI][kNI][4], int mi, int kk) {
  a[0] = pack2_from_float<T>(c[mi][2 * kk][0], c[mi][2 * kk][1]);
  a[1] = pack2_from_float<T>(c[mi][2 * kk][2], c[mi][2 * kk][3]);
  a[2] = pack2_from_float<T>(c[mi][2 * kk + 1][0], c[mi][2 * kk + 1][1]);
  a[3] = pack2_from_float<T>(c[mi][2 * kk + 1][2], c[mi][2 * kk + 1][3]);
}

}  // namespace rudnn::tile
